// The rule every session's dump follows: a dump that fails hands on nothing
// of what it decoded. The caller gets the error and an empty output whatever
// path the failure takes (transport, malformed reply, a kernel error code,
// interrupted every time), so no session has to clear on each early return.
// Engine::DumpWhole keeps the rule for whole dumps; EmptyOnFailure is it for
// the cursor-style ones.
#pragma once

#include "util/sys_error.h"

namespace podnet::nl {

// Runs fill, which writes into the caller's output, and empties that output
// (reset) when fill fails.
template <typename Reset, typename Fill>
ErrorInfo EmptyOnFailure(Reset&& reset, Fill&& fill) {
  ErrorInfo err = fill();
  if (err.failed()) reset();
  return err;
}

}  // namespace podnet::nl
