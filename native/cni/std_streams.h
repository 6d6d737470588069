// The plugin's own stdin, stdout and stderr: bounded reads and writes that wait with poll() against a deadline, so
// a runtime that never closes stdin or never reads stdout cannot hold the plugin forever.
#pragma once

#include <stddef.h>

#include <string>

#include "cni/deadline.h"

namespace podnet::cni {

// EnsureStandardFds opens /dev/null on any of fds 0..2 that is closed, so that no socket or netns fd the plugin
// opens later lands there and gets written to as stdout.
void EnsureStandardFds();

// ReadOutcome is how ReadInput ended.
enum class ReadOutcome { kComplete, kTooLarge, kTimedOut, kFailed };

// ReadInput reads fd to its end into *out, at most max bytes: one byte more gives kTooLarge (the rest is not read).
// kFailed leaves the errno in *err.
ReadOutcome ReadInput(int fd, size_t max, const Deadline& deadline, std::string* out, int* err);

// WriteOutput writes all of data to fd. Returns false with *err (ETIMEDOUT at the deadline, EPIPE, ...) otherwise.
bool WriteOutput(int fd, const std::string& data, const Deadline& deadline, int* err);

}  // namespace podnet::cni
