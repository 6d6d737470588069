// The JS handle class every netlink protocol binding derives from
// (IpsetHandle, RtnetlinkHandle, NftablesHandle): it owns one protocol
// session, opened on a JS peer or on a socket as the constructor's arguments
// choose, hands a live copy of it to each operation's baton, and gives every
// handle the same setTimeout() and close().
#pragma once

#include <errno.h>
#include <napi.h>

#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "netlink/deferred_socket.h"
#include "netlink/js_transport.h"
#include "netlink/socket_transport.h"
#include "netns/hop_promise.h"
#include "util/js_error.h"
#include "util/run_baton.h"

namespace podnet::nl {

// SessionSlot is where a handle keeps its session: shared with whatever else
// the handle hands out (ipset's sync channels), so that close() empties it for
// them too.
template <typename SessionT>
struct SessionSlot {
  std::shared_ptr<SessionT> session;

  // Live returns a copy, never a reference into the slot: a JS peer's
  // exchange() runs inside the operation and may close the handle, which
  // empties the slot. Throws `closedCode` (errno EBADF) when the handle is
  // closed.
  std::shared_ptr<SessionT> Live(Napi::Env env, const char* what, const char* closedCode) const {
    if (!session) {
      ErrorInfo err = SystemError(EBADF, what);
      err.code = closedCode;
      err.message = std::string(what) + " handle is closed";
      ThrowError(env, err);
    }
    return session;
  }
};

// HandleKind names a protocol's handle: its JS class ("IpsetHandle"), the
// protocol in its errors ("ipset"), the code of a call on a closed handle
// ("ERR_IPSET_CLOSED") and the netlink protocol its sockets speak.
struct HandleKind {
  const char* className;
  const char* what;
  const char* closedCode;
  int protocol;
};

// OpenBaton opens a socket of one protocol on the hop thread, inside the
// namespace (HopPromise), then builds the handle around it on the JS thread
// with the handle class's own constructor, which adopts the socket
// (AdoptedTransport). A socket never adopted closes with the baton.
struct OpenBaton {
  int timeoutMs = 0;
  int protocol = 0;
  Napi::FunctionReference handleClass;
  std::unique_ptr<SocketTransport> socket;
  ErrorInfo error;
  void Inside() { error = SocketTransport::Open(-1, protocol, &socket); }
  void Abandon() { handleClass.SuppressDestruct(); }
  Napi::Value Result(Napi::Env env) {
    AdoptedTransport adopt(&socket);
    return handleClass.New({Napi::Number::New(env, -1), Napi::Number::New(env, timeoutMs)});
  }
};

// OpenFirst runs a handle's first operation on a DeferredSocket in the same
// hop that opens the socket (HopPromise): on the hop thread, inside the
// namespace, the socket is opened and the operation's baton executed; its
// result is built on the JS thread as a libuv worker's would be. The batons
// of these protocols hold no JS references, so abandoning one drops nothing.
template <typename Baton>
struct OpenFirst {
  std::unique_ptr<Baton> baton;
  // The baton's session owns it.
  DeferredSocket* socket = nullptr;
  ErrorInfo error;
  void Inside() {
    if ((error = socket->OpenHere()).failed()) return;
    baton->Execute();
    error = baton->error;
  }
  void Abandon() {}
  Napi::Value Result(Napi::Env env) { return baton->Result(env); }
};

// SessionHandle is the base of a protocol's handle class Derived, which
// describes itself in a static constexpr HandleKind kKind and inherits the
// constructor (using SessionHandle::SessionHandle). JS constructs it as new
// XHandle(netnsFd, timeoutMs, exchange?, receiveBufferBytes?)
// (nl::TransportFromArgs), which opens its socket on the calling thread, or
// has XHandle.open(netnsFd, timeoutMs) open it on the hop thread and resolve
// to the handle. Derived may declare its own static NewSession(transport,
// timeoutMs) when its session takes more than those two. With
// new XHandle(netnsFd, timeoutMs, undefined, undefined, true) the socket is a
// DeferredSocket, opened by the first operation in its own hop (Start).
template <typename Derived, typename SessionT>
class SessionHandle : public Napi::ObjectWrap<Derived> {
 public:
  using SessionPtr = std::shared_ptr<SessionT>;
  using Callback = Napi::Value (Derived::*)(const Napi::CallbackInfo&);

  // MethodEntry is one row of a handle's method table: the JS name and the member that answers it.
  struct MethodEntry {
    const char* name;
    Callback method;
  };

  explicit SessionHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Derived>(info) {
    int timeoutMs = info[1].As<Napi::Number>().Int32Value();
    slot_->session = Derived::NewSession(TransportFromArgs(info, Derived::kKind.protocol), timeoutMs);
  }

  static SessionPtr NewSession(std::unique_ptr<Transport> transport, int timeoutMs) {
    return std::make_shared<SessionT>(std::move(transport), timeoutMs);
  }

 protected:
  // DefineHandle defines the JS class kKind.className: the protocol's own
  // methods in the table's order, then setTimeout(ms) and close().
  static Napi::Function DefineHandle(Napi::Env env, std::initializer_list<MethodEntry> table) {
    std::vector<Napi::ClassPropertyDescriptor<Derived>> methods;
    methods.reserve(table.size() + 2);
    for (const MethodEntry& m : table) methods.push_back(Napi::ObjectWrap<Derived>::InstanceMethod(m.name, m.method));
    methods.push_back(Napi::ObjectWrap<Derived>::InstanceMethod(
        "setTimeout", static_cast<Callback>(&SessionHandle::SetTimeout)));
    methods.push_back(Napi::ObjectWrap<Derived>::InstanceMethod("close", static_cast<Callback>(&SessionHandle::Close)));
    methods.push_back(Napi::ObjectWrap<Derived>::StaticMethod("open", &SessionHandle::OpenAsync));
    return Napi::ObjectWrap<Derived>::DefineClass(env, Derived::kKind.className, methods);
  }

  SessionPtr Live(Napi::Env env) const { return slot_->Live(env, Derived::kKind.what, Derived::kKind.closedCode); }

  // Start gives the baton the live session and runs it (util/run_baton.h):
  // sync returns its value, else a promise; name is the async resource's.
  // While the socket is a DeferredSocket not yet open, the operation goes to
  // the hop thread, which opens it first (OpenFirst). The sync operations
  // (ipset's) are never made on a deferred socket.
  template <typename Baton>
  Napi::Value Start(const Napi::CallbackInfo& info, std::unique_ptr<Baton> baton, const char* name,
                    bool sync = false) {
    baton->session = Live(info.Env());
    DeferredSocket* deferred = baton->session->engine().transport().Deferred();
    if (!sync && deferred != nullptr && !deferred->opened()) {
      auto first = std::make_unique<OpenFirst<Baton>>();
      first->socket = deferred;
      first->baton = std::move(baton);
      return HopPromise<OpenFirst<Baton>>::Queue(info.Env(), deferred->netnsFd(), std::move(first));
    }
    return RunBaton(info.Env(), std::move(baton), sync, name);
  }

  std::shared_ptr<SessionSlot<SessionT>> slot_ = std::make_shared<SessionSlot<SessionT>>();

 private:
  // setTimeout(ms): the deadline per silence of every later operation; waits for the one under way.
  Napi::Value SetTimeout(const Napi::CallbackInfo& info) {
    SessionPtr s = Live(info.Env());
    std::unique_lock<std::mutex> lock;
    ErrorInfo err = s->Lock(&lock);
    if (err.failed()) ThrowError(info.Env(), err);
    s->engine().set_timeout(info[0].As<Napi::Number>().Int32Value());
    return info.Env().Undefined();
  }

  // XHandle.open(netnsFd, timeoutMs): called on the class, whose constructor the baton keeps to build the handle.
  static Napi::Value OpenAsync(const Napi::CallbackInfo& info) {
    auto baton = std::make_unique<OpenBaton>();
    int netnsFd = info[0].As<Napi::Number>().Int32Value();
    baton->timeoutMs = info[1].As<Napi::Number>().Int32Value();
    baton->protocol = Derived::kKind.protocol;
    baton->handleClass = Napi::Persistent(info.This().As<Napi::Function>());
    return HopPromise<OpenBaton>::Queue(info.Env(), netnsFd, std::move(baton));
  }

  // close(): pending async work keeps its own reference; the socket closes when the last of it ends.
  Napi::Value Close(const Napi::CallbackInfo& info) {
    slot_->session.reset();
    return info.Env().Undefined();
  }
};

}  // namespace podnet::nl
