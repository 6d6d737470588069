#pragma once

#include <napi.h>

namespace podnet {

void RegisterNftables(Napi::Env env, Napi::Object exports);

}  // namespace podnet
