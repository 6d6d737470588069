// How the netlink bindings hand decoded objects to JS: the converters every
// protocol's Result() shares, so that bytes, arrays and the attributes a
// codec keeps raw look alike whichever protocol answers.
#pragma once

#include <napi.h>
#include <stdint.h>

#include <vector>

namespace podnet::nl {

// BytesValue: a Buffer holding a copy of bytes.
inline Napi::Buffer<uint8_t> BytesValue(Napi::Env env, const std::vector<uint8_t>& bytes) {
  return Napi::Buffer<uint8_t>::Copy(env, bytes.data(), bytes.size());
}

// ObjectArray: items converted one by one, in order.
template <typename T, Napi::Object (*Convert)(Napi::Env, const T&)>
Napi::Array ObjectArray(Napi::Env env, const std::vector<T>& items) {
  Napi::Array out = Napi::Array::New(env, items.size());
  for (size_t i = 0; i < items.size(); i++) out.Set(static_cast<uint32_t>(i), Convert(env, items[i]));
  return out;
}

// RawAttrObject: { type, data } for an attribute a codec keeps undecoded
// (any struct with a numeric type and a byte vector data).
template <typename Attr>
Napi::Object RawAttrObject(Napi::Env env, const Attr& attr) {
  Napi::Object a = Napi::Object::New(env);
  a.Set("type", attr.type);
  a.Set("data", BytesValue(env, attr.data));
  return a;
}

// UnknownAttrs: the `unknown` array of a decoded object.
template <typename Attr>
Napi::Array UnknownAttrs(Napi::Env env, const std::vector<Attr>& attrs) {
  return ObjectArray<Attr, RawAttrObject<Attr>>(env, attrs);
}

}  // namespace podnet::nl
