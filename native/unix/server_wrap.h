// SeqpacketServerHandle: a listening SOCK_SEQPACKET socket.
//   new SeqpacketServerHandle(path, mode, backlog)   binds and listens (throws)
//   accept(timeoutMs) -> Promise<SeqpacketSocketHandle>  (timeoutMs < 0: none)
//   close()   rejects pending accepts (ERR_UNIX_CLOSED), unlinks the socket
//             file if it is still the one this server made, closes the fd
// Accepts are served in call order. An awaited accept keeps the event loop
// alive; a server nobody accepts on does not.
#pragma once

#include <napi.h>

#include <string>

#include "unix/op_driver.h"
#include "unix/seqpacket_ops.h"

namespace podnet {

class ServerWrap : public Napi::ObjectWrap<ServerWrap>, private OpDriver {
 public:
  // socketClass: the SeqpacketSocketHandle constructor accepted connections
  // are made with; it must outlive every server (the binding keeps it).
  static Napi::Function Define(Napi::Env env, Napi::FunctionReference* socketClass);
  explicit ServerWrap(const Napi::CallbackInfo& info);
  ~ServerWrap() override;

 private:
  Napi::Value Accept(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);

  bool Attempt(int queue, PendingOp& op) override;
  int EventsFor(int queue, const PendingOp& op) override { return UV_READABLE; }
  ErrorInfo OpError(int queue, const PendingOp& op, int err) override;
  void KeepAlive(bool on) override;

  ErrorInfo ClosedError() const;
  void Release();

  Napi::FunctionReference* socketClass_;
  std::string path_;
  ListenedSocket socket_;
};

}  // namespace podnet
