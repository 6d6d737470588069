#include "netlink/js_transport.h"

#include <errno.h>
#include <string.h>

#include "netlink/deferred_socket.h"
#include "netlink/socket_transport.h"
#include "util/js_error.h"

namespace podnet::nl {

ErrorInfo JsTransport::Send(const uint8_t* data, size_t len) {
  Napi::HandleScope scope(env_);
  Napi::Uint8Array request = Napi::Uint8Array::New(env_, len);
  if (len > 0) memcpy(request.Data(), data, len);
  Napi::Value result = exchange_.Call({request});
  if (!result.IsArray()) {
    ErrorInfo err = SystemError(EPROTO, "sendmsg");
    err.message = "netlink peer: exchange() must return an array of Uint8Array datagrams";
    return err;
  }
  Napi::Array replies = result.As<Napi::Array>();
  for (uint32_t i = 0; i < replies.Length(); i++) {
    Napi::Value v = replies.Get(i);
    if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
      ErrorInfo err = SystemError(EPROTO, "recvmsg");
      err.message = "netlink peer: exchange() returned something other than a Uint8Array";
      return err;
    }
    Napi::Uint8Array d = v.As<Napi::Uint8Array>();
    queue_.emplace_back(d.Data(), d.Data() + d.ByteLength());
  }
  return ErrorInfo{};
}

ErrorInfo JsTransport::Recv(RxBuffer* buf, size_t* len, int /*timeoutMs*/) {
  if (queue_.empty()) return SystemError(ETIMEDOUT, "recv");
  *buf = std::move(queue_.front());
  *len = buf->size();
  queue_.pop_front();
  return ErrorInfo{};
}

// The socket an AdoptedTransport in scope on this thread offers, if any.
static thread_local std::unique_ptr<SocketTransport>* adoptable = nullptr;

AdoptedTransport::AdoptedTransport(std::unique_ptr<SocketTransport>* socket) { adoptable = socket; }
AdoptedTransport::~AdoptedTransport() { adoptable = nullptr; }

std::unique_ptr<Transport> TransportFromArgs(const Napi::CallbackInfo& info, int protocol) {
  Napi::Env env = info.Env();
  if (adoptable != nullptr && *adoptable) return std::move(*adoptable);
  if (info.Length() > 2 && info[2].IsFunction()) return std::make_unique<JsTransport>(env, info[2].As<Napi::Function>());
  std::unique_ptr<SocketTransport> socket;
  int netnsFd = info[0].As<Napi::Number>().Int32Value();
  int receiveBufferBytes = info.Length() > 3 && info[3].IsNumber() ? info[3].As<Napi::Number>().Int32Value() : 0;
  bool defer = info.Length() > 4 && info[4].IsBoolean() && info[4].As<Napi::Boolean>().Value();
  if (defer && netnsFd >= 0) {
    std::unique_ptr<DeferredSocket> deferred;
    ErrorInfo err = DeferredSocket::Make(netnsFd, protocol, receiveBufferBytes, &deferred);
    if (err.failed()) ThrowError(env, err);
    return deferred;
  }
  ErrorInfo err = SocketTransport::Open(netnsFd, protocol, &socket, receiveBufferBytes);
  if (err.failed()) ThrowError(env, err);
  return socket;
}

}  // namespace podnet::nl
