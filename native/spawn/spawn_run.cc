#include "spawn/spawn_run.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "spawn/spawn_child.h"

namespace podnet {

namespace {

int64_t NowMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// Owns a started child until it is reaped: whatever path leaves RunToEnd
// (including an exception), no zombie and no running orphan is left behind.
class ChildGuard {
 public:
  explicit ChildGuard(pid_t pid) : pid_(pid) {}
  ~ChildGuard() {
    if (reaped_) return;
    KillGroup();
    Wait(nullptr);
  }

  void KillGroup() {
    // The group takes whatever the program started; the pid itself in case
    // the program left the group. Once reaped the pid may belong to someone
    // else, but the group id cannot be reused while any member lives.
    kill(-pid_, SIGKILL);
    if (!reaped_) kill(pid_, SIGKILL);
  }

  // Blocking wait; only called once the child has exited or been killed.
  void Wait(int* status) {
    int st = 0;
    while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    if (status != nullptr) *status = st;
  }

  // Non-blocking: true when the child has exited (and is now reaped).
  bool TryWait(int* status) {
    pid_t r;
    do {
      r = waitpid(pid_, status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == pid_) reaped_ = true;
    return reaped_;
  }

  bool reaped() const { return reaped_; }

 private:
  pid_t pid_;
  bool reaped_ = false;
};

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { Close(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// Reads what is available now, up to a bound so that a program writing
// faster than we read cannot keep us away from the deadline and limit checks;
// false once the writer has closed (EOF or error).
bool Drain(int fd, std::string* into) {
  char buf[65536];
  for (int chunk = 0; chunk < 16; chunk++) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      into->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
  return true;
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev == nullptr) return "SIG" + std::to_string(sig);
  return std::string("SIG") + abbrev;
}

}  // namespace

ErrorInfo RunToEnd(const SpawnRequest& request, SpawnResult* result) {
  // The feed's eventfd goes with the run, on every path out: left to the JS
  // object's finalizer it closed at some later GC, in the middle of whatever
  // ran then (an fd count of another test saw it vanish).
  struct FeedCloser {
    StdinFeed* feed;
    ~FeedCloser() {
      if (feed != nullptr) feed->Close();
    }
  } feedCloser{request.stdinFeed.get()};
  const int64_t started = NowMs();
  const int64_t deadline = started + request.timeoutMs;

  std::string path;
  ErrorInfo err = ResolveProgram(request.argv.at(0), &path);
  if (err.failed()) return err;
  result->path = path;
  PreparedExec exec(path, request.argv, request.env);

  pid_t pid = -1;
  ChildPipes pipes;
  err = StartChild(exec, request.netnsFd, &pid, &pipes);
  if (err.failed()) return err;
  ChildGuard child(pid);
  Fd in(pipes.stdinFd), out(pipes.stdoutFd), errOut(pipes.stderrFd);

  // A pidfd lets poll() wake on the child's exit; without one (kernels before
  // 5.3) the loop polls in short slices and checks with WNOHANG.
  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));

  // What goes to stdin: the request's bytes, or a feed's, gathered in fed as
  // they come. The request's are not copied (an ipset restore sends megabytes).
  std::string fed;
  const std::string& input = request.stdinFeed ? fed : request.stdinData;
  bool inputComplete = !request.stdinFeed;
  size_t written = 0;
  int status = 0;
  bool exited = false;

  while (out.open() || errOut.open() || !exited) {
    if (in.open() && inputComplete && written == input.size()) in.Close();  // EOF for the program
    int64_t remaining = deadline - NowMs();
    if (remaining <= 0) {
      result->timedOut = true;
      break;
    }
    struct pollfd fds[5];
    int nfds = 0;
    int inIdx = -1, outIdx = -1, errIdx = -1, pidIdx = -1, feedIdx = -1;
    if (in.open() && written < input.size()) {
      inIdx = nfds;
      fds[nfds++] = {in.get(), POLLOUT, 0};
    }
    if (in.open() && !inputComplete) {
      feedIdx = nfds;
      fds[nfds++] = {request.stdinFeed->fd(), POLLIN, 0};
    }
    if (out.open()) {
      outIdx = nfds;
      fds[nfds++] = {out.get(), POLLIN, 0};
    }
    if (errOut.open()) {
      errIdx = nfds;
      fds[nfds++] = {errOut.get(), POLLIN, 0};
    }
    int waitMs = static_cast<int>(std::min<int64_t>(remaining, 1000));
    if (!exited && pidfd.open()) {
      pidIdx = nfds;
      fds[nfds++] = {pidfd.get(), POLLIN, 0};
    } else if (!exited) {
      waitMs = std::min(waitMs, 5);
    }

    int ready = poll(fds, static_cast<nfds_t>(nfds), waitMs);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return SystemError(errno, "poll").With("path", path);
    }

    if (feedIdx >= 0 && fds[feedIdx].revents != 0) inputComplete = request.stdinFeed->Take(&fed);
    if (inIdx >= 0 && (fds[inIdx].revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
      ssize_t n = write(in.get(), input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      // EPIPE: the program closed its stdin and does not want the rest.
      if (n < 0 && errno != EAGAIN && errno != EINTR) in.Close();
    }
    if (outIdx >= 0 && fds[outIdx].revents != 0 && !Drain(out.get(), &result->stdoutData)) out.Close();
    if (errIdx >= 0 && fds[errIdx].revents != 0 && !Drain(errOut.get(), &result->stderrData)) errOut.Close();

    if (result->stdoutData.size() + result->stderrData.size() > request.maxOutputBytes) {
      result->outputLimitExceeded = true;
      break;
    }
    if (!exited && (pidIdx < 0 || fds[pidIdx].revents != 0)) exited = child.TryWait(&status);
  }

  if (!exited) {
    child.KillGroup();
    child.Wait(&status);
  } else if (result->timedOut) {
    // The program ended but something it started still holds the pipes.
    child.KillGroup();
  }
  in.Close();

  if (WIFEXITED(status)) {
    result->exitCode = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result->signal = SignalName(WTERMSIG(status));
  }
  result->durationMs = static_cast<double>(NowMs() - started);
  return ErrorInfo{};
}

}  // namespace podnet
