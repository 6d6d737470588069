// JS surface of native/unix: the two handle classes (server_wrap.h,
// socket_wrap.h) and the kernel's limits that lib/unix checks arguments
// against. Arguments are checked in lib/unix; here only types are converted.
#include "unix/unix_binding.h"

#include "unix/seqpacket_ops.h"
#include "unix/server_wrap.h"
#include "unix/socket_wrap.h"
#include "util/constants_object.h"

namespace podnet {

void RegisterUnix(Napi::Env env, Napi::Object exports) {
  Napi::Function socketClass = SocketWrap::Define(env);
  // The server makes accepted handles with this constructor; it lives as
  // long as the addon instance.
  auto* socketRef = new Napi::FunctionReference(Napi::Persistent(socketClass));
  napi_add_env_cleanup_hook(
      env, [](void* ref) { delete static_cast<Napi::FunctionReference*>(ref); }, socketRef);
  exports.Set("SeqpacketSocketHandle", socketClass);
  exports.Set("SeqpacketServerHandle", ServerWrap::Define(env, socketRef));
  exports.Set("unixConstants", ConstantsObject(env, {
                                                        {"pathMax", static_cast<uint32_t>(UnixPathMax())},
                                                        {"maxFds", static_cast<uint32_t>(kUnixMaxFds)},
                                                    }));
}

}  // namespace podnet
