#include "spawn/spawn_run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "spawn/spawn_child.h"

namespace podnet {

namespace {

// Without a pidfd (kernels before 5.3) the exit is checked this often.
constexpr uint64_t kReapTickMs = 5;

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev == nullptr) return "SIG" + std::to_string(sig);
  return std::string("SIG") + abbrev;
}

void ReapBlocking(pid_t pid, int* status) {
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (status != nullptr) *status = st;
}

}  // namespace

int64_t MonotonicMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

ErrorInfo StartProgram(const SpawnRequest& request, StartedChild* child) {
  std::string path;
  ErrorInfo err = ResolveProgram(request.argv.at(0), &path);
  if (err.failed()) return err;
  PreparedExec exec(path, request.argv, request.env);
  ChildPipes pipes;
  pid_t pid = -1;
  err = StartChild(exec, request.netnsFd, &pid, &pipes);
  if (err.failed()) return err;
  child->pid = pid;
  child->path = path;
  child->stdinFd = pipes.stdinFd;
  child->stdoutFd = pipes.stdoutFd;
  child->stderrFd = pipes.stderrFd;
  // PIDFD_NONBLOCK is irrelevant: the fd is only polled. pidfds are always close-on-exec.
  child->pidFd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  return ErrorInfo{};
}

SpawnWatch::SpawnWatch(uv_loop_t* loop, const SpawnRequest& request, StartedChild* child, Done done)
    : loop_(loop),
      feed_(request.stdinFeed),
      stdinData_(request.stdinFeed ? std::string() : request.stdinData),
      inputComplete_(!request.stdinFeed),
      calledAtMs_(request.calledAtMs),
      deadlineMs_(request.calledAtMs + request.timeoutMs),
      maxOutput_(request.maxOutputBytes),
      pid_(child->pid),
      done_(std::move(done)) {
  result_.path = child->path;
  in_.fd = std::exchange(child->stdinFd, -1);
  out_.fd = std::exchange(child->stdoutFd, -1);
  err_.fd = std::exchange(child->stderrFd, -1);
  exit_.fd = std::exchange(child->pidFd, -1);
  child->pid = -1;
}

SpawnWatch* SpawnWatch::Start(uv_loop_t* loop, const SpawnRequest& request, StartedChild* child, Done done, int* uvErr) {
  auto* watch = new SpawnWatch(loop, request, child, std::move(done));
  *uvErr = watch->Begin();
  if (*uvErr == 0) return watch;
  watch->finished_ = true;
  watch->KillGroup();
  ReapBlocking(watch->pid_, nullptr);
  watch->CloseAll();
  watch->DeleteIfClosed();
  return nullptr;
}

int SpawnWatch::OpenPoll(Polled* p, int fd) {
  p->fd = fd;
  int rc = uv_poll_init(loop_, &p->poll, fd);
  if (rc != 0) return rc;
  p->poll.data = this;
  p->open = true;
  openHandles_++;
  return 0;
}

void SpawnWatch::Watch(Polled* p, int events) {
  if (!p->open || p->events == events) return;
  p->events = events;
  if (events == 0) {
    uv_poll_stop(&p->poll);
  } else {
    uv_poll_start(&p->poll, events, PollCb);
  }
}

void SpawnWatch::ClosePolled(Polled* p) {
  if (p->open) {
    // uv_close takes the fd out of epoll at once, so closing it next is safe.
    uv_close(reinterpret_cast<uv_handle_t*>(&p->poll), CloseCb);
    p->open = false;
  }
  if (p != &feedPoll_ && p->fd >= 0) close(p->fd);  // the feed's eventfd is the feed's own
  p->fd = -1;
  p->events = 0;
}

int SpawnWatch::Begin() {
  int rc = uv_timer_init(loop_, &deadlineTimer_);
  if (rc != 0) return rc;
  deadlineTimer_.data = this;
  deadlineOpen_ = true;
  openHandles_++;
  int64_t remaining = std::max<int64_t>(0, deadlineMs_ - MonotonicMs());
  uv_timer_start(&deadlineTimer_, TimerCb, static_cast<uint64_t>(remaining), 0);

  if (exit_.fd >= 0) {
    if ((rc = OpenPoll(&exit_, exit_.fd)) != 0) return rc;
    Watch(&exit_, UV_READABLE);
  } else {
    if ((rc = uv_timer_init(loop_, &reapTimer_)) != 0) return rc;
    reapTimer_.data = this;
    reapTimerOpen_ = true;
    openHandles_++;
    uv_timer_start(&reapTimer_, TimerCb, kReapTickMs, kReapTickMs);
  }
  if ((rc = OpenPoll(&out_, out_.fd)) != 0) return rc;
  Watch(&out_, UV_READABLE);
  if ((rc = OpenPoll(&err_, err_.fd)) != 0) return rc;
  Watch(&err_, UV_READABLE);
  if ((rc = OpenPoll(&in_, in_.fd)) != 0) return rc;
  if (feed_) {
    if ((rc = OpenPoll(&feedPoll_, feed_->fd())) != 0) return rc;
    Watch(&feedPoll_, UV_READABLE);
  }
  UpdateStdin();
  return 0;
}

void SpawnWatch::PollCb(uv_poll_t* handle, int status, int events) {
  static_cast<SpawnWatch*>(handle->data)->OnPoll(handle, status);
}

void SpawnWatch::TimerCb(uv_timer_t* handle) { static_cast<SpawnWatch*>(handle->data)->OnTimer(handle); }

void SpawnWatch::CloseCb(uv_handle_t* handle) {
  auto* watch = static_cast<SpawnWatch*>(handle->data);
  if (--watch->openHandles_ == 0 && watch->finished_) delete watch;
}

void SpawnWatch::OnPoll(uv_poll_t* handle, int status) {
  if (finished_) return;
  if (handle == &exit_.poll) {
    OnChildExit();
  } else if (handle == &out_.poll) {
    ReadOutput(&out_, &result_.stdoutData);
  } else if (handle == &err_.poll) {
    ReadOutput(&err_, &result_.stderrData);
  } else if (handle == &feedPoll_.poll) {
    TakeFeed();
  } else if (handle == &in_.poll) {
    // An error status (the reader went away) shows up as EPIPE in the write.
    WriteStdin();
  }
}

void SpawnWatch::OnTimer(uv_timer_t* handle) {
  if (finished_) return;
  if (handle == &reapTimer_) {
    if (ChildExited()) OnChildExit();
    return;
  }
  // The loop's clock may lag the real one: a deadline never fires early.
  int64_t now = MonotonicMs();
  if (now < deadlineMs_) {
    uv_timer_start(&deadlineTimer_, TimerCb, static_cast<uint64_t>(deadlineMs_ - now), 0);
    return;
  }
  if (killed_) return;
  result_.timedOut = true;
  KillGroup();
}

// Reads what is there now, up to a bound per wake-up so that one fast writer
// cannot keep the loop from everything else; closes the fd at EOF.
void SpawnWatch::ReadOutput(Polled* p, std::string* into) {
  char buf[65536];
  for (int chunk = 0; chunk < 16 && p->fd >= 0; chunk++) {
    ssize_t n = read(p->fd, buf, sizeof buf);
    if (n > 0) {
      into->append(buf, static_cast<size_t>(n));
      if (result_.stdoutData.size() + result_.stderrData.size() > maxOutput_ && !killed_) {
        result_.outputLimitExceeded = true;
        KillGroup();
        return;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    ClosePolled(p);  // EOF, or an error that ends the stream
    return;
  }
}

void SpawnWatch::WriteStdin() {
  const std::string& input = feed_ ? fed_ : stdinData_;
  while (in_.fd >= 0 && written_ < input.size()) {
    ssize_t n = write(in_.fd, input.data() + written_, input.size() - written_);
    if (n > 0) {
      written_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    // EPIPE: the program closed its stdin and does not want the rest.
    ClosePolled(&in_);
    return;
  }
  UpdateStdin();
}

void SpawnWatch::TakeFeed() {
  inputComplete_ = feed_->Take(&fed_);
  if (inputComplete_) ClosePolled(&feedPoll_);
  WriteStdin();
}

void SpawnWatch::UpdateStdin() {
  if (in_.fd < 0) return;
  const std::string& input = feed_ ? fed_ : stdinData_;
  if (written_ < input.size()) {
    Watch(&in_, UV_WRITABLE);
    return;
  }
  if (inputComplete_) {
    ClosePolled(&in_);  // EOF for the program
    return;
  }
  Watch(&in_, 0);
}

void SpawnWatch::KillGroup() {
  // The group takes whatever the program started. Called only while the
  // child is unreaped (running or a zombie), so its pid, which is the group
  // id, cannot have been reused.
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
  killed_ = true;
  // Past the limit nothing more is read; at the deadline what was written
  // before the kill is still read, to the end of the run.
  if (result_.outputLimitExceeded) {
    Watch(&out_, 0);
    Watch(&err_, 0);
  }
}

// Without reaping, so that the group id stays reserved until KillGroup ran.
bool SpawnWatch::ChildExited() {
  siginfo_t info;
  memset(&info, 0, sizeof info);
  int rc;
  do {
    rc = waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
  } while (rc < 0 && errno == EINTR);
  return rc < 0 || info.si_pid == pid_;
}

void SpawnWatch::OnChildExit() {
  if (!result_.outputLimitExceeded) {
    // The program's own exit (or its kill at the deadline) ends the run: what
    // it wrote is in the pipes now. Descendants still in its group go with
    // it, before anything reads on, so none can keep the pipes busy.
    kill(-pid_, SIGKILL);
    if (out_.fd >= 0) ReadOutput(&out_, &result_.stdoutData);
    if (err_.fd >= 0) ReadOutput(&err_, &result_.stderrData);
    // A descendant outside the group may still write; what came is enough.
    for (int round = 0; round < 64 && !result_.outputLimitExceeded && (out_.fd >= 0 || err_.fd >= 0); round++) {
      size_t before = result_.stdoutData.size() + result_.stderrData.size();
      if (out_.fd >= 0) ReadOutput(&out_, &result_.stdoutData);
      if (err_.fd >= 0) ReadOutput(&err_, &result_.stderrData);
      if (result_.stdoutData.size() + result_.stderrData.size() == before) break;
    }
  }
  int status = 0;
  ReapBlocking(pid_, &status);  // it has exited: no wait
  Finish(status);
}

void SpawnWatch::Finish(int status) {
  finished_ = true;
  if (WIFEXITED(status)) {
    result_.exitCode = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result_.signal = SignalName(WTERMSIG(status));
  }
  result_.durationMs = static_cast<double>(MonotonicMs() - calledAtMs_);
  CloseAll();
  Done done = std::move(done_);
  done_ = nullptr;
  if (done) done(result_);
  DeleteIfClosed();
}

void SpawnWatch::CloseAll() {
  // The feed's eventfd goes with the run, on every path out: left to the JS
  // object's finalizer it would close at some later GC, in the middle of
  // whatever runs then.
  ClosePolled(&feedPoll_);  // out of epoll before the feed closes its eventfd
  if (feed_) feed_->Close();
  ClosePolled(&in_);
  ClosePolled(&out_);
  ClosePolled(&err_);
  ClosePolled(&exit_);
  if (reapTimerOpen_) {
    reapTimerOpen_ = false;
    uv_close(reinterpret_cast<uv_handle_t*>(&reapTimer_), CloseCb);
  }
  if (deadlineOpen_) {
    deadlineOpen_ = false;
    uv_close(reinterpret_cast<uv_handle_t*>(&deadlineTimer_), CloseCb);
  }
}

void SpawnWatch::DeleteIfClosed() {
  if (openHandles_ == 0) delete this;
}

void SpawnWatch::Abort() {
  if (finished_) return;
  finished_ = true;
  done_ = nullptr;
  KillGroup();
  ReapBlocking(pid_, nullptr);
  CloseAll();
  DeleteIfClosed();
}

}  // namespace podnet
