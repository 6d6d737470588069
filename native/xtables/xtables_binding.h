#pragma once

#include <napi.h>

namespace podnet {

void RegisterXtables(Napi::Env env, Napi::Object exports);

}  // namespace podnet
