// How the bindings read the plain JS objects lib/ passes in. lib/ validates
// every argument before the native call (design: C++ checks only arity and
// types), so a reader takes what is there: a missing or mistyped property
// reads as 0, "" or no bytes, never as an exception.
#pragma once

#include <napi.h>
#include <stdint.h>

#include <string>
#include <utility>
#include <vector>

namespace podnet {

// U32Of: v as a uint32, 0 when it is not a number.
inline uint32_t U32Of(const Napi::Value& v) { return v.IsNumber() ? v.As<Napi::Number>().Uint32Value() : 0; }

// StrOf: v as UTF-8, "" when it is not a string.
inline std::string StrOf(const Napi::Value& v) {
  return v.IsString() ? v.As<Napi::String>().Utf8Value() : std::string();
}

// BytesOf: a copy of v's bytes, none when it is not a typed array.
inline std::vector<uint8_t> BytesOf(const Napi::Value& v) {
  if (!v.IsTypedArray()) return {};
  Napi::Uint8Array a = v.As<Napi::Uint8Array>();
  return std::vector<uint8_t>(a.Data(), a.Data() + a.ByteLength());
}

// JsReader reads properties of the objects of one call. It makes each
// property name once, keyed by the address of the literal (or schema entry)
// that names it: a name made from UTF-8 on every read is looked up in V8's
// string table each time, which for one pod's nf_tables rules is most of the
// call. Keep one reader per call; it holds handles of the call's scope.
class JsReader {
 public:
  explicit JsReader(Napi::Env env) : env_(env) {}

  Napi::Value Get(const Napi::Object& o, const char* name) { return o.Get(Key(name)); }
  uint32_t U32(const Napi::Object& o, const char* name) { return U32Of(Get(o, name)); }
  std::string Str(const Napi::Object& o, const char* name) { return StrOf(Get(o, name)); }
  std::vector<uint8_t> Bytes(const Napi::Object& o, const char* name) { return BytesOf(Get(o, name)); }

  // OptU32: true and *out set when the property is a number; false, *out untouched, otherwise.
  bool OptU32(const Napi::Object& o, const char* name, uint32_t* out) {
    Napi::Value v = Get(o, name);
    if (!v.IsNumber()) return false;
    *out = v.As<Napi::Number>().Uint32Value();
    return true;
  }

 private:
  Napi::Value Key(const char* name) {
    for (const auto& [p, v] : keys_) {
      if (p == name) return v;
    }
    Napi::String s = Napi::String::New(env_, name);
    keys_.emplace_back(name, s);
    return s;
  }

  Napi::Env env_;
  std::vector<std::pair<const char*, Napi::Value>> keys_;
};

}  // namespace podnet
