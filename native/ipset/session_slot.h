// Where an IpsetHandle keeps its session (netlink/session_handle.h), shared
// with the handle's sync channels (sync_channel.h).
#pragma once

#include <napi.h>

#include <memory>

#include "ipset/session.h"
#include "netlink/session_handle.h"

namespace podnet {

using SessionSlot = nl::SessionSlot<ipset::Session>;
using SlotPtr = std::shared_ptr<SessionSlot>;

// kIpsetWhat names the protocol in an ipset handle's errors; kIpsetClosedCode is the code of a call on a closed one.
constexpr const char* kIpsetWhat = "ipset";
constexpr const char* kIpsetClosedCode = "ERR_IPSET_CLOSED";

// LiveSession is the slot's session, copied; throws ERR_IPSET_CLOSED when the handle is closed.
inline std::shared_ptr<ipset::Session> LiveSession(Napi::Env env, const SessionSlot& slot) {
  return slot.Live(env, kIpsetWhat, kIpsetClosedCode);
}

}  // namespace podnet
