// JS surface of native/xtables: take the xtables lock without waiting, release
// it, and name the private lock file a restore run under that lock uses.
#include "xtables/xtables_binding.h"

#include <unistd.h>

#include "util/js_error.h"
#include "xtables/xtables_lock.h"

namespace podnet {

static Napi::Value XtablesTryLock(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = -1;
  ErrorInfo err = TryXtablesLock(info[0].As<Napi::String>().Utf8Value(), &fd);
  if (err.failed()) ThrowError(env, err);
  return Napi::Number::New(env, fd);
}

static Napi::Value XtablesUnlock(const Napi::CallbackInfo& info) {
  close(info[0].As<Napi::Number>().Int32Value());
  return info.Env().Undefined();
}

static Napi::Value XtablesPrivateLockPath(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path;
  ErrorInfo err = PrivateLockPath(&path);
  if (err.failed()) ThrowError(env, err);
  return Napi::String::New(env, path);
}

void RegisterXtables(Napi::Env env, Napi::Object exports) {
  exports.Set("xtablesTryLock", Napi::Function::New(env, XtablesTryLock, "xtablesTryLock"));
  exports.Set("xtablesUnlock", Napi::Function::New(env, XtablesUnlock, "xtablesUnlock"));
  exports.Set("xtablesPrivateLockPath", Napi::Function::New(env, XtablesPrivateLockPath, "xtablesPrivateLockPath"));
}

}  // namespace podnet
