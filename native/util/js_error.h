// The JS side of util/sys_error.h: turns an ErrorInfo into a JS error through
// the factory that lib/native.ts installs. Only binding code includes this;
// the plain layers below it stay free of N-API.
#pragma once

#include <napi.h>

#include "util/sys_error.h"

namespace podnet {

// Builds the JS error object on the JS thread.
Napi::Value MakeError(Napi::Env env, const ErrorInfo& info);

// Throws the JS error as a C++ exception (NAPI_CPP_EXCEPTIONS).
[[noreturn]] void ThrowError(Napi::Env env, const ErrorInfo& info);

class HopReturn;  // netns/hop_promise.h

// Per-instance state of the addon.
struct AddonData {
  Napi::FunctionReference errorFactory;
  // Where the hop thread hands finished hops back to this instance (made on first use, never freed).
  HopReturn* hopReturn = nullptr;
};

}  // namespace podnet
