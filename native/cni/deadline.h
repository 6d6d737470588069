// One point in time (CLOCK_MONOTONIC) that every wait of the plugin is bounded by.
#pragma once

#include <stdint.h>

namespace podnet::cni {

// NowNs is CLOCK_MONOTONIC in nanoseconds.
int64_t NowNs();

// Deadline is start + ms.
class Deadline {
 public:
  Deadline(int64_t start_ns, uint32_t ms) : at_ns_(start_ns + static_cast<int64_t>(ms) * 1000000) {}

  // RemainingMs is what is left for poll(), rounded up so that a wait never ends before the deadline; 0 once passed.
  int RemainingMs() const;

  bool Passed() const { return NowNs() >= at_ns_; }

 private:
  int64_t at_ns_;
};

}  // namespace podnet::cni
