// The lock a protocol session takes for one operation. Workers and the JS
// thread share a session; a JS peer's exchange() runs on the JS thread inside
// an operation, and every operation of a peer's session runs there too. So
// when the lock is held and the transport is a JS peer, the holder is the
// caller's own thread re-entering from its peer, and waiting would never end:
// that is refused with the given code (errno EDEADLK) and changes nothing.
#pragma once

#include <errno.h>

#include <mutex>
#include <string>

#include "netlink/transport.h"

namespace podnet::nl {

inline ErrorInfo LockSession(std::mutex& mu, const Transport& transport, const char* code, const char* what,
                             std::unique_lock<std::mutex>* lock) {
  *lock = std::unique_lock<std::mutex>(mu, std::try_to_lock);
  if (lock->owns_lock()) return ErrorInfo{};
  if (transport.NeedsJsThread()) {
    ErrorInfo err = SystemError(EDEADLK, what);
    err.code = code;
    err.message = std::string(what) + " client called from inside its own netlink peer's exchange()";
    return err;
  }
  lock->lock();
  return ErrorInfo{};
}

}  // namespace podnet::nl
