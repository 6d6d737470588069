#pragma once

#include <napi.h>

namespace podnet {

void RegisterNetns(Napi::Env env, Napi::Object exports);

}  // namespace podnet
