// SeqpacketSocketHandle: one connected (or connecting) SOCK_SEQPACKET socket.
//   new SeqpacketSocketHandle()            a fresh socket, for connect()
//   connect(path, timeoutMs) -> Promise<void>
//   send(data, fds, timeoutMs) -> Promise<void>     (fds are not taken over)
//   receive(maxBytes, maxFds, timeoutMs) -> Promise<{ data, fds } | null>
//   peerCredentials() -> { pid, uid, gid } | undefined
//   close()                                 rejects what is pending, ERR_UNIX_CLOSED
// timeoutMs < 0: no deadline. Sends and receives are each served in call
// order. The fd is closed by close() or, as a safety net, when the object is
// collected.
#pragma once

#include <napi.h>

#include <string>

#include "unix/op_driver.h"
#include "unix/seqpacket_ops.h"

namespace podnet {

// How the server hands an accepted connection to the constructor (an
// External, so JS cannot make a handle adopt an arbitrary fd). The
// constructor sets fd to -1 once it owns it.
struct AdoptedSocket {
  int fd = -1;
  PeerCredentials cred;
  std::string path;
};

class SocketWrap : public Napi::ObjectWrap<SocketWrap>, private OpDriver {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit SocketWrap(const Napi::CallbackInfo& info);
  ~SocketWrap() override;

 private:
  struct Op;

  Napi::Value Connect(const Napi::CallbackInfo& info);
  Napi::Value Send(const Napi::CallbackInfo& info);
  Napi::Value Receive(const Napi::CallbackInfo& info);
  Napi::Value PeerCredentialsOf(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);

  bool Attempt(int queue, PendingOp& op) override;
  int EventsFor(int queue, const PendingOp& op) override;
  uint64_t RetryAtNs(const PendingOp& op) override;
  bool PrepareToWait(int queue, PendingOp& op) override;
  ErrorInfo OpError(int queue, const PendingOp& op, int err) override;
  void KeepAlive(bool on) override;

  bool AttemptConnect(Op& op);
  bool AttemptSend(Op& op);
  bool AttemptReceive(Op& op);
  ErrorInfo WithPath(ErrorInfo err) const;
  ErrorInfo ClosedError() const;
  Napi::Promise Rejected(const ErrorInfo& err);

  std::string path_;
  PeerCredentials cred_;
  bool hasCred_ = false;
  bool connectStarted_ = false;
};

}  // namespace podnet
