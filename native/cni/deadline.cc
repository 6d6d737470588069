#include "cni/deadline.h"

#include <time.h>

namespace podnet::cni {

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int Deadline::RemainingMs() const {
  int64_t left = at_ns_ - NowNs();
  if (left <= 0) return 0;
  return static_cast<int>((left + 999999) / 1000000);
}

}  // namespace podnet::cni
