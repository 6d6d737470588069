#pragma once

#include <napi.h>

#include <cstddef>

#include "ipset/session_slot.h"

namespace podnet {

// The frame a sync channel reads its request from and writes its answer to:
// a Buffer the JS side owns and fills (host byte order). The layout is
// exported to JS as ipsetSyncFrame, so there is one definition of it.
namespace sync_frame {
constexpr size_t kResult = 0;      // int32 out: 0, or the kernel's error for the entry
constexpr size_t kCommand = 4;     // u8: IPSET_CMD_ADD or IPSET_CMD_DEL
constexpr size_t kFlags = 5;       // u8: kExcl
constexpr size_t kNameLength = 6;  // u8: bytes of the name, at most 31
constexpr size_t kName = 8;        // the set name's UTF-8 bytes (no NUL needed)
constexpr size_t kRecord = 40;     // one entry record (record.h), its size in its header
constexpr size_t kBytes = 40 + 320;  // room for a record with the longest comment (48 + 256, aligned)
constexpr uint8_t kExcl = 1;
}  // namespace sync_frame

// The frame's address is taken once, when the channel is made: the frame
// must stay attached and keep its size while the function lives (the client
// keeps it private, a Buffer.alloc'd one, and never hands it out).
//
// NewSyncChannel(slot, frame) -> a function of no arguments that sends the
// ADD or DEL described in frame and writes its result there: the *Sync
// single-entry fast path. Every argument of a call costs an N-API conversion,
// and on this path (a kernel round trip of ~4 us) passing the request as
// five arguments costs about 0.4 us; bound to its frame, a call converts
// nothing. Throws (as a JS exception) for a closed handle, a malformed frame
// or a system error; a kernel refusal of the entry is a result, not a throw.
Napi::Function NewSyncChannel(Napi::Env env, const SlotPtr& slot, Napi::Uint8Array frame);

void ExportSyncFrame(Napi::Env env, Napi::Object exports);

}  // namespace podnet
