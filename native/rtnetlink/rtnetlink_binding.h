#pragma once

#include <napi.h>

namespace podnet {

void RegisterRtnetlink(Napi::Env env, Napi::Object exports);

}  // namespace podnet
