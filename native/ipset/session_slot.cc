#include "ipset/session_slot.h"

#include <errno.h>

#include "util/js_error.h"

namespace podnet {

std::shared_ptr<ipset::Session> LiveSession(Napi::Env env, const SessionSlot& slot) {
  if (!slot.session) {
    ErrorInfo err = SystemError(EBADF, "ipset");
    err.code = "ERR_IPSET_CLOSED";
    err.message = "ipset handle is closed";
    ThrowError(env, err);
  }
  return slot.session;
}

}  // namespace podnet
