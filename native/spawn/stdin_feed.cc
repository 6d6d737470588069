#include "spawn/stdin_feed.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace podnet {

ErrorInfo StdinFeed::Create(std::shared_ptr<StdinFeed>* out) {
  int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return SystemError(errno, "eventfd");
  out->reset(new StdinFeed(fd));
  return ErrorInfo{};
}

StdinFeed::~StdinFeed() { Close(); }

void StdinFeed::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (eventFd_ < 0) return;
  close(eventFd_);
  eventFd_ = -1;
  ended_ = true;
}

void StdinFeed::WakeLocked() {
  if (eventFd_ < 0) return;
  uint64_t one = 1;
  // EAGAIN only when the counter is about to overflow: it is readable then anyway.
  while (write(eventFd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void StdinFeed::Write(const char* data, size_t len) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return;
  queued_.append(data, len);
  WakeLocked();
}

void StdinFeed::End() {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return;
  ended_ = true;
  WakeLocked();
}

bool StdinFeed::Take(std::string* out) {
  uint64_t count;
  while (read(eventFd_, &count, sizeof count) < 0 && errno == EINTR) {
  }
  std::lock_guard<std::mutex> lock(mu_);
  out->append(queued_);
  queued_.clear();
  return ended_;
}

}  // namespace podnet
