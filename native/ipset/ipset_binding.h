#pragma once

#include <napi.h>

namespace podnet {

void RegisterIpset(Napi::Env env, Napi::Object exports);

}  // namespace podnet
