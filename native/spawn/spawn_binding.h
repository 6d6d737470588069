#pragma once

#include <napi.h>

namespace podnet {

void RegisterSpawn(Napi::Env env, Napi::Object exports);

}  // namespace podnet
