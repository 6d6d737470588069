#pragma once

#include <napi.h>

#include <deque>
#include <memory>
#include <vector>

#include "netlink/transport.h"

namespace podnet::nl {

// Hands request bytes to a JS NetlinkPeer (lib/netlink/peer.ts) and queues the
// datagrams it answers with. The peer answers synchronously, so an empty
// queue is final: Recv reports ETIMEDOUT at once (a lost ACK) instead of
// sleeping the JS thread until the deadline.
class JsTransport final : public Transport {
 public:
  JsTransport(Napi::Env env, Napi::Function exchange) : env_(env), exchange_(Napi::Persistent(exchange)) {}

  ErrorInfo Send(const uint8_t* data, size_t len) override;
  ErrorInfo Recv(RxBuffer* buf, size_t* len, int timeoutMs) override;
  void Drain() override { queue_.clear(); }
  bool NeedsJsThread() const override { return true; }

  Napi::Function exchange() const { return exchange_.Value(); }

 private:
  Napi::Env env_;
  Napi::FunctionReference exchange_;
  std::deque<RxBuffer> queue_;
};

class SocketTransport;

// AdoptedTransport hands a socket opened beforehand (SessionHandle's
// OpenBaton) to the handle constructed while it is in scope, on this thread:
// TransportFromArgs takes it instead of opening one. Not reachable from JS,
// so no script can hand a handle a socket.
class AdoptedTransport {
 public:
  explicit AdoptedTransport(std::unique_ptr<SocketTransport>* socket);
  ~AdoptedTransport();
  AdoptedTransport(const AdoptedTransport&) = delete;
  AdoptedTransport& operator=(const AdoptedTransport&) = delete;
};

// What the handle classes of every protocol take as new XHandle(netnsFd,
// timeoutMs, exchange?, receiveBufferBytes?, defer?): a JS peer when exchange
// is a function, else a socket of that protocol opened in netnsFd's namespace
// (-1: the current one), with SO_RCVBUF set to receiveBufferBytes when it is
// a number > 0; with defer true and netnsFd >= 0, a DeferredSocket (on a
// duplicate of netnsFd) that the first operation opens there. Throws the JS
// error when the socket (or the duplicate) cannot be opened.
std::unique_ptr<Transport> TransportFromArgs(const Napi::CallbackInfo& info, int protocol);

}  // namespace podnet::nl
