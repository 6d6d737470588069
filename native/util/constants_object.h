#pragma once

#include <napi.h>
#include <stdint.h>

#include <initializer_list>
#include <utility>

namespace podnet {

// An object of named numbers: how the addon hands its protocol constants and
// layouts to lib/, so that each has one definition, in C++.
inline Napi::Object ConstantsObject(Napi::Env env, std::initializer_list<std::pair<const char*, uint32_t>> entries) {
  Napi::Object o = Napi::Object::New(env);
  for (const auto& [name, value] : entries) o.Set(name, value);
  return o;
}

}  // namespace podnet
