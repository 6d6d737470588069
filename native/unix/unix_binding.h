#pragma once

#include <napi.h>

namespace podnet {

// SeqpacketServerHandle, SeqpacketSocketHandle and unixConstants.
void RegisterUnix(Napi::Env env, Napi::Object exports);

}  // namespace podnet
