// JS surface of native/unix: the two handle classes (server_wrap.h,
// socket_wrap.h) and the kernel's limits that lib/unix checks arguments
// against. Arguments are checked in lib/unix; here only types are converted.
#include "unix/unix_binding.h"

#include <errno.h>
#include <fcntl.h>

#include "unix/seqpacket_ops.h"
#include "unix/server_wrap.h"
#include "unix/socket_wrap.h"
#include "util/constants_object.h"

namespace podnet {

// fdsOpen(fds) -> the index of the first fd that is not open, or -1. The
// check lib/unix makes before a send: one fcntl each, where fs.fstatSync
// cost a statx and a Stats object per attached fd.
static Napi::Value FdsOpen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray()) throw Napi::TypeError::New(env, "fds must be an array");
  Napi::Array fds = info[0].As<Napi::Array>();
  for (uint32_t i = 0; i < fds.Length(); i++) {
    int fd = fds.Get(i).As<Napi::Number>().Int32Value();
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) return Napi::Number::New(env, i);
  }
  return Napi::Number::New(env, -1);
}

void RegisterUnix(Napi::Env env, Napi::Object exports) {
  Napi::Function socketClass = SocketWrap::Define(env);
  // The server makes accepted handles with this constructor; it lives as
  // long as the addon instance.
  auto* socketRef = new Napi::FunctionReference(Napi::Persistent(socketClass));
  napi_add_env_cleanup_hook(
      env, [](void* ref) { delete static_cast<Napi::FunctionReference*>(ref); }, socketRef);
  exports.Set("SeqpacketSocketHandle", socketClass);
  exports.Set("SeqpacketServerHandle", ServerWrap::Define(env, socketRef));
  exports.Set("fdsOpen", Napi::Function::New(env, FdsOpen, "fdsOpen"));
  exports.Set("unixConstants", ConstantsObject(env, {
                                                        {"pathMax", static_cast<uint32_t>(UnixPathMax())},
                                                        {"maxFds", static_cast<uint32_t>(kUnixMaxFds)},
                                                    }));
}

}  // namespace podnet
