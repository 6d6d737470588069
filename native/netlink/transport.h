// Where netlink bytes go: the kernel (SocketTransport) or a JS peer
// (JsTransport, for the fake kernel). The engine and codecs above never know
// which one they talk to.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <vector>

#include "util/sys_error.h"

namespace podnet::nl {

// An allocator whose resize() leaves new bytes uninitialized: a socket's
// receive buffer is sized for the largest datagram (256 KiB) but recv() writes
// only what arrives, and a client opened per pod should not pay for clearing
// (and faulting in) 64 pages it never reads.
template <typename T>
struct UninitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <typename U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// Where a transport puts one received datagram; only its first *len bytes
// are ever read.
using RxBuffer = std::vector<uint8_t, UninitAllocator<uint8_t>>;

class DeferredSocket;

class Transport {
 public:
  virtual ~Transport() = default;
  // One sendmsg() of one or more netlink messages.
  virtual ErrorInfo Send(const uint8_t* data, size_t len) = 0;
  // Receives one datagram into *buf (grown as needed, never shrunk) and sets
  // *len. Waits at most timeoutMs for it; ETIMEDOUT after that.
  virtual ErrorInfo Recv(RxBuffer* buf, size_t* len, int timeoutMs) = 0;
  // Throws away whatever is queued (replies to requests that timed out).
  virtual void Drain() = 0;
  // True when the transport must be driven from the JS thread. This is also
  // the promise that a transport answering false never runs JS: a session
  // relies on it to refuse re-entry from a JS peer (Session::Lock) and the
  // sync channel to skip holding the session during a socket's call.
  virtual bool NeedsJsThread() const { return false; }
  // The socket a handle opens with its first operation (DeferredSocket), when this is one.
  virtual DeferredSocket* Deferred() { return nullptr; }
};

int64_t MonotonicMs();

}  // namespace podnet::nl
