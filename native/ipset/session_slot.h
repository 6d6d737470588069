#pragma once

#include <napi.h>

#include <memory>

#include "ipset/session.h"

namespace podnet {

// Where a handle keeps its session: shared with the handle's sync channels, so
// that close() empties it for them too.
struct SessionSlot {
  std::shared_ptr<ipset::Session> session;
};
using SlotPtr = std::shared_ptr<SessionSlot>;

// A copy, never a reference into the slot: a JS peer's exchange() runs inside
// the operation and may close the handle, which empties the slot. Throws
// ERR_IPSET_CLOSED when the handle is closed.
std::shared_ptr<ipset::Session> LiveSession(Napi::Env env, const SessionSlot& slot);

}  // namespace podnet
