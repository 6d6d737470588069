#include "unix/server_wrap.h"

#include <errno.h>
#include <unistd.h>

#include "unix/socket_wrap.h"
#include "util/js_error.h"

namespace podnet {

Napi::Function ServerWrap::Define(Napi::Env env, Napi::FunctionReference* socketClass) {
  return DefineClass(env, "SeqpacketServerHandle",
                     {
                         InstanceMethod<&ServerWrap::Accept>("accept"),
                         InstanceMethod<&ServerWrap::Close>("close"),
                     },
                     socketClass);
}

ServerWrap::ServerWrap(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<ServerWrap>(info),
      OpDriver(info.Env(), "podnet:SeqpacketServer"),
      socketClass_(static_cast<Napi::FunctionReference*>(info.Data())) {
  path_ = info[0].As<Napi::String>().Utf8Value();
  unsigned mode = info[1].As<Napi::Number>().Uint32Value();
  int backlog = info[2].As<Napi::Number>().Int32Value();
  ErrorInfo err = ListenSeqpacket(path_, mode, backlog, &socket_);
  if (err.failed()) ThrowError(info.Env(), err);
  fd_ = socket_.fd;
}

ServerWrap::~ServerWrap() {
  DetachWaiter();
  Release();
}

void ServerWrap::Release() {
  if (fd_ < 0) return;
  // Unlinked before the fd is closed: until then no other server can have
  // bound this path, so a file with our identity is certainly ours.
  UnlinkIfSame(path_, socket_.dev, socket_.ino);
  close(fd_);
  fd_ = -1;
}

ErrorInfo ServerWrap::ClosedError() const {
  ErrorInfo info;
  info.kind = "unix";
  info.code = "ERR_UNIX_CLOSED";
  info.message = "seqpacket server '" + path_ + "' is closed";
  return info;
}

Napi::Value ServerWrap::Accept(const Napi::CallbackInfo& info) {
  if (fd_ < 0) {
    auto deferred = Napi::Promise::Deferred::New(info.Env());
    deferred.Reject(MakeError(info.Env(), ClosedError()));
    return deferred.Promise();
  }
  auto op = std::make_unique<PendingOp>(info.Env());
  op->timeoutMs = info[0].As<Napi::Number>().Int64Value();
  return Submit(kRead, std::move(op));
}

Napi::Value ServerWrap::Close(const Napi::CallbackInfo& info) {
  if (fd_ >= 0) {
    RejectAll(ClosedError());
    Release();
  }
  return info.Env().Undefined();
}

bool ServerWrap::Attempt(int queue, PendingOp& op) {
  AdoptedSocket adopted;
  ErrorInfo err;
  switch (AcceptSeqpacket(fd_, &adopted.fd, &adopted.cred, &err)) {
    case IoStatus::kWouldBlock:
      return false;
    case IoStatus::kFailed:
      Reject(op, err.With("path", path_));
      return true;
    case IoStatus::kDone:
      break;
  }
  adopted.path = path_;
  try {
    Napi::Object socket = socketClass_->New({Napi::External<AdoptedSocket>::New(Env(), &adopted)});
    Resolve(op, socket);
  } catch (...) {
    // The constructor clears adopted.fd once the handle owns it.
    if (adopted.fd >= 0) close(adopted.fd);
    throw;
  }
  return true;
}

ErrorInfo ServerWrap::OpError(int queue, const PendingOp& op, int err) {
  ErrorInfo info = SystemError(err, "accept4").With("path", path_);
  if (err == ETIMEDOUT) {
    info.message = "ETIMEDOUT: no connection within " + std::to_string(op.timeoutMs) + " ms, accept4 '" + path_ + "'";
  }
  return info;
}

void ServerWrap::KeepAlive(bool on) {
  if (on) {
    Ref();
  } else {
    Unref();
  }
}

}  // namespace podnet
