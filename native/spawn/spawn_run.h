// The parent side of a child process: feeds stdin, collects stdout and stderr,
// enforces a deadline and an output limit, and always reaps the child. Runs on
// a libuv worker thread (blocking poll), never on the JS thread.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <string>
#include <vector>

#include "spawn/stdin_feed.h"
#include "util/sys_error.h"

namespace podnet {

struct SpawnRequest {
  std::vector<std::string> argv;  // argv[0] is resolved on kSafePath unless it contains '/'
  std::vector<std::string> env;   // "NAME=value", exactly what the child gets
  std::string stdinData;
  std::shared_ptr<StdinFeed> stdinFeed;  // instead of stdinData: input that comes later
  int netnsFd = -1;               // -1: the caller's own namespace
  int64_t timeoutMs = 0;
  size_t maxOutputBytes = 0;      // stdout + stderr together
};

struct SpawnResult {
  int exitCode = -1;  // -1 when killed by a signal
  std::string signal; // "SIGKILL", ... or empty
  std::string stdoutData;
  std::string stderrData;
  bool timedOut = false;
  bool outputLimitExceeded = false;
  std::string path;   // the resolved binary
  double durationMs = 0;
};

// Runs the request to its end. Errors are for "could not start" (missing
// binary, setns refused, no fds); a program that ran and failed, timed out or
// wrote too much is a successful return with the matching fields set.
ErrorInfo RunToEnd(const SpawnRequest& request, SpawnResult* result);

}  // namespace podnet
