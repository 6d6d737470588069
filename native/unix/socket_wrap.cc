#include "unix/socket_wrap.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "util/js_error.h"

namespace podnet {

struct SocketWrap::Op : PendingOp {
  enum class Kind { kConnect, kSend, kReceive };
  Op(Napi::Env env, Kind k) : PendingOp(env), kind(k) {}
  ~Op() override {
    if (ownsFds) CloseFds(fds);
  }
  Kind kind;
  // connect: retried with a growing pause while the backlog is full.
  std::string path;
  uint64_t retryAtNs = 0;
  uint64_t backoffMs = 1;
  // send: the caller's bytes and fds until the message has to wait, then
  // copies and duplicates of them (ownsFds).
  const char* bytes = nullptr;
  size_t length = 0;
  std::vector<char> copy;
  std::vector<int> fds;
  bool ownsFds = false;
  // receive
  std::vector<char> buffer;
  size_t maxFds = 0;
};

Napi::Function SocketWrap::Define(Napi::Env env) {
  return DefineClass(env, "SeqpacketSocketHandle",
                     {
                         InstanceMethod<&SocketWrap::Connect>("connect"),
                         InstanceMethod<&SocketWrap::Send>("send"),
                         InstanceMethod<&SocketWrap::Receive>("receive"),
                         InstanceMethod<&SocketWrap::PeerCredentialsOf>("peerCredentials"),
                         InstanceMethod<&SocketWrap::Close>("close"),
                     });
}

SocketWrap::SocketWrap(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<SocketWrap>(info), OpDriver(info.Env(), "podnet:SeqpacketSocket") {
  if (info.Length() > 0 && info[0].IsExternal()) {
    AdoptedSocket* adopted = info[0].As<Napi::External<AdoptedSocket>>().Data();
    fd_ = adopted->fd;
    adopted->fd = -1;
    cred_ = adopted->cred;
    hasCred_ = true;
    path_ = adopted->path;
    connectStarted_ = true;
    return;
  }
  ErrorInfo err = NewSeqpacketSocket(&fd_);
  if (err.failed()) ThrowError(info.Env(), err);
}

SocketWrap::~SocketWrap() {
  DetachWaiter();
  if (fd_ >= 0) close(fd_);
}

ErrorInfo SocketWrap::WithPath(ErrorInfo err) const {
  if (path_.empty()) return err;
  for (const auto& field : err.fields) {
    if (field.first == "path") return err;
  }
  return err.With("path", path_);
}

ErrorInfo SocketWrap::ClosedError() const {
  ErrorInfo info;
  info.kind = "unix";
  info.code = "ERR_UNIX_CLOSED";
  info.message = path_.empty() ? std::string("seqpacket socket is closed") : "seqpacket socket '" + path_ + "' is closed";
  return info;
}

Napi::Promise SocketWrap::Rejected(const ErrorInfo& err) {
  auto deferred = Napi::Promise::Deferred::New(Env());
  deferred.Reject(MakeError(Env(), err));
  return deferred.Promise();
}

Napi::Value SocketWrap::Connect(const Napi::CallbackInfo& info) {
  if (fd_ < 0) return Rejected(ClosedError());
  std::string path = info[0].As<Napi::String>().Utf8Value();
  if (connectStarted_) return Rejected(SystemError(EISCONN, "connect").With("path", path));
  connectStarted_ = true;
  path_ = path;
  auto op = std::make_unique<Op>(Env(), Op::Kind::kConnect);
  op->path = std::move(path);
  op->timeoutMs = info[1].As<Napi::Number>().Int64Value();
  return Submit(kWrite, std::move(op));
}

Napi::Value SocketWrap::Send(const Napi::CallbackInfo& info) {
  if (fd_ < 0) return Rejected(ClosedError());
  auto data = info[0].As<Napi::TypedArrayOf<uint8_t>>();
  Napi::Array fds = info[1].As<Napi::Array>();
  auto op = std::make_unique<Op>(Env(), Op::Kind::kSend);
  op->bytes = reinterpret_cast<const char*>(data.Data());
  op->length = data.ByteLength();
  op->fds.reserve(fds.Length());
  for (uint32_t i = 0; i < fds.Length(); i++) op->fds.push_back(fds.Get(i).As<Napi::Number>().Int32Value());
  op->timeoutMs = info[2].As<Napi::Number>().Int64Value();
  return Submit(kWrite, std::move(op));
}

Napi::Value SocketWrap::Receive(const Napi::CallbackInfo& info) {
  if (fd_ < 0) return Rejected(ClosedError());
  auto op = std::make_unique<Op>(Env(), Op::Kind::kReceive);
  op->buffer.resize(info[0].As<Napi::Number>().Uint32Value());
  op->maxFds = std::min<size_t>(info[1].As<Napi::Number>().Uint32Value(), kUnixMaxFds);
  op->timeoutMs = info[2].As<Napi::Number>().Int64Value();
  return Submit(kRead, std::move(op));
}

Napi::Value SocketWrap::PeerCredentialsOf(const Napi::CallbackInfo& info) {
  if (!hasCred_) return info.Env().Undefined();
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("pid", static_cast<double>(cred_.pid));
  out.Set("uid", static_cast<double>(cred_.uid));
  out.Set("gid", static_cast<double>(cred_.gid));
  return out;
}

Napi::Value SocketWrap::Close(const Napi::CallbackInfo& info) {
  if (fd_ >= 0) {
    RejectAll(ClosedError());
    // RejectAll closed the waiter, which took the fd out of epoll first.
    close(fd_);
    fd_ = -1;
  }
  return info.Env().Undefined();
}

bool SocketWrap::Attempt(int queue, PendingOp& pending) {
  Op& op = static_cast<Op&>(pending);
  switch (op.kind) {
    case Op::Kind::kConnect:
      return AttemptConnect(op);
    case Op::Kind::kSend:
      return AttemptSend(op);
    case Op::Kind::kReceive:
      return AttemptReceive(op);
  }
  return false;
}

bool SocketWrap::AttemptConnect(Op& op) {
  uint64_t now = NowNs();
  if (now < op.retryAtNs) return false;
  ErrorInfo err;
  switch (ConnectSeqpacket(fd_, op.path, &err)) {
    case IoStatus::kWouldBlock:
      // The listener's backlog is full and AF_UNIX has no event for "it has
      // room again": try again after a pause that grows to 100 ms.
      op.retryAtNs = now + op.backoffMs * 1000000u;
      op.backoffMs = std::min<uint64_t>(op.backoffMs * 2, 100);
      return false;
    case IoStatus::kFailed:
      Reject(op, err);
      return true;
    case IoStatus::kDone:
      break;
  }
  err = ReadPeerCredentials(fd_, &cred_);
  if (err.failed()) {
    Reject(op, WithPath(err));
    return true;
  }
  hasCred_ = true;
  Resolve(op, Env().Undefined());
  return true;
}

bool SocketWrap::AttemptSend(Op& op) {
  ErrorInfo err;
  switch (SendSeqpacket(fd_, op.bytes, op.length, op.fds.data(), op.fds.size(), &err)) {
    case IoStatus::kWouldBlock:
      return false;
    case IoStatus::kFailed:
      Reject(op, WithPath(err));
      return true;
    case IoStatus::kDone:
      Resolve(op, Env().Undefined());
      return true;
  }
  return false;
}

bool SocketWrap::AttemptReceive(Op& op) {
  ReceivedMessage msg;
  ErrorInfo err;
  switch (ReceiveSeqpacket(fd_, &op.buffer, op.maxFds, &msg, &err)) {
    case IoStatus::kWouldBlock:
      return false;
    case IoStatus::kFailed:
      Reject(op, WithPath(err));
      return true;
    case IoStatus::kDone:
      break;
  }
  if (msg.eof) {
    Resolve(op, Env().Null());
    return true;
  }
  try {
    Napi::Object out = Napi::Object::New(Env());
    out.Set("data", Napi::Buffer<char>::Copy(Env(), op.buffer.data(), msg.size));
    Napi::Array fds = Napi::Array::New(Env(), msg.fds.size());
    for (uint32_t i = 0; i < msg.fds.size(); i++) fds.Set(i, msg.fds[i]);
    out.Set("fds", fds);
    Resolve(op, out);
  } catch (...) {
    // Until the resolved value reaches JS the fds are nobody's but ours.
    CloseFds(msg.fds);
    throw;
  }
  return true;
}

int SocketWrap::EventsFor(int queue, const PendingOp& pending) {
  const Op& op = static_cast<const Op&>(pending);
  switch (op.kind) {
    case Op::Kind::kConnect:
      return 0;
    case Op::Kind::kSend:
      return UV_WRITABLE;
    case Op::Kind::kReceive:
      return UV_READABLE;
  }
  return 0;
}

uint64_t SocketWrap::RetryAtNs(const PendingOp& pending) {
  const Op& op = static_cast<const Op&>(pending);
  return op.kind == Op::Kind::kConnect ? op.retryAtNs : kNoDeadline;
}

bool SocketWrap::PrepareToWait(int queue, PendingOp& pending) {
  Op& op = static_cast<Op&>(pending);
  if (op.kind != Op::Kind::kSend || op.ownsFds) return true;
  op.copy.assign(op.bytes, op.bytes + op.length);
  op.bytes = op.copy.data();
  // Duplicates, so the caller may close its fds while the message waits
  // (and a reused fd number can never be sent by mistake).
  std::vector<int> dups;
  dups.reserve(op.fds.size());
  for (int fd : op.fds) {
    int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) {
      ErrorInfo err = WithPath(SystemError(errno, "fcntl"));
      CloseFds(dups);
      Reject(op, err);
      return false;
    }
    dups.push_back(dup);
  }
  op.fds.swap(dups);
  op.ownsFds = true;
  return true;
}

ErrorInfo SocketWrap::OpError(int queue, const PendingOp& pending, int err) {
  const Op& op = static_cast<const Op&>(pending);
  const char* syscall = op.kind == Op::Kind::kConnect ? "connect" : op.kind == Op::Kind::kSend ? "sendmsg" : "recvmsg";
  ErrorInfo info = WithPath(SystemError(err, syscall));
  if (err == ETIMEDOUT) {
    std::string within = std::to_string(op.timeoutMs) + " ms";
    const char* what = op.kind == Op::Kind::kConnect ? "the server's backlog stayed full for "
                       : op.kind == Op::Kind::kSend  ? "the message could not be sent within "
                                                     : "no message within ";
    info.message = std::string("ETIMEDOUT: ") + what + within + ", " + syscall;
    if (!path_.empty()) info.message += " '" + path_ + "'";
  }
  return info;
}

void SocketWrap::KeepAlive(bool on) {
  if (on) {
    Ref();
  } else {
    Unref();
  }
}

}  // namespace podnet
