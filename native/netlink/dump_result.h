// The rule every session's dump follows: a dump that fails hands on nothing
// of what it decoded. The caller gets the error and an empty output whatever
// path the failure takes (transport, malformed reply, a kernel error code,
// interrupted every time), so no session has to clear on each early return.
#pragma once

#include <errno.h>

#include <string>

#include "netlink/engine.h"

namespace podnet::nl {

// Runs fill, which writes into the caller's output, and empties that output
// (reset) when fill fails.
template <typename Reset, typename Fill>
ErrorInfo EmptyOnFailure(Reset&& reset, Fill&& fill) {
  ErrorInfo err = fill();
  if (err.failed()) reset();
  return err;
}

// Takes a dump (attempt: send it, read it to NLMSG_DONE, map a kernel error)
// again while the kernel flags it NLM_F_DUMP_INTR, each attempt from an empty
// output; EAGAIN once `attempts` in a row were interrupted. what names the
// dump in that error ("rtnetlink dump of routes").
template <typename Reset, typename Attempt>
ErrorInfo DumpWhole(Engine& engine, int attempts, const std::string& what, Reset&& reset, Attempt&& attempt) {
  return EmptyOnFailure(reset, [&]() -> ErrorInfo {
    for (int i = 0; i < attempts; i++) {
      reset();
      ErrorInfo err = attempt();
      if (err.failed() || !engine.dump_interrupted()) return err;
    }
    ErrorInfo err = SystemError(EAGAIN, "recv");
    err.message = what + " was interrupted by changes " + std::to_string(attempts) + " times in a row";
    return err;
  });
}

}  // namespace podnet::nl
