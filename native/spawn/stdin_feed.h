// Input for a child's stdin that arrives after the child started: the JS
// thread appends it, the worker that feeds the pipe takes it. Lets a program
// start (exec, dynamic linking, its own setup) while the caller still works
// out what to write, e.g. iptables-restore while iptables-save runs.
#pragma once

#include <stddef.h>

#include <memory>
#include <mutex>
#include <string>

#include "util/sys_error.h"

namespace podnet {

class StdinFeed {
 public:
  static ErrorInfo Create(std::shared_ptr<StdinFeed>* out);
  ~StdinFeed();
  StdinFeed(const StdinFeed&) = delete;
  StdinFeed& operator=(const StdinFeed&) = delete;

  // JS thread. Bytes written after End() or Close() are ignored.
  void Write(const char* data, size_t len);
  void End();
  // The worker, when its run is over: closes the eventfd (the destructor
  // does, for a feed never run). Idempotent.
  void Close();

  // Readable (poll) when Write or End happened since the last Take.
  int fd() const { return eventFd_; }
  // Worker: appends what was written since the last call to *out; true once
  // End() was called and everything written is in *out.
  bool Take(std::string* out);

 private:
  explicit StdinFeed(int eventFd) : eventFd_(eventFd) {}
  void WakeLocked();

  std::mutex mu_;
  std::string queued_;
  bool ended_ = false;
  int eventFd_;  // -1 once closed; written under mu_
};

}  // namespace podnet
