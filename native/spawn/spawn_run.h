// The parent side of a child process, in two steps. StartProgram resolves the
// binary and starts the child (a short blocking job for a libuv worker).
// SpawnWatch then owns the started child on the JS thread's loop: it feeds
// stdin, collects stdout and stderr, enforces the deadline and the output
// limit with uv_poll/uv_timer handles and learns of the exit through a pidfd,
// so a running program holds no thread at all. No N-API here.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include <functional>
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
  int64_t calledAtMs = 0;         // MonotonicMs() of the call: the deadline counts from here
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

// A child that StartProgram started: its pid, the parent's pipe ends and a
// pidfd (-1 on kernels without pidfd_open). All fds close-on-exec, non-blocking.
struct StartedChild {
  pid_t pid = -1;
  int stdinFd = -1;
  int stdoutFd = -1;
  int stderrFd = -1;
  int pidFd = -1;
  std::string path;
};

int64_t MonotonicMs();

// Blocking (a worker thread): resolves argv[0] and starts the child in the
// request's namespace. An error means "could not start" (missing binary,
// setns refused, no fds) and nothing is left running.
ErrorInfo StartProgram(const SpawnRequest& request, StartedChild* child);

// Watches one started child from the loop until it is reaped. The run ends on
// the child's own exit: whatever output has come by then is the result, and
// every process still in the child's process group is killed (a descendant
// that left the group with setsid or setpgid is not). At the deadline or past
// the output limit the group and the child are killed. A program that ran and
// failed, timed out or wrote too much is a result, never an error.
class SpawnWatch {
 public:
  // Called once, on the loop thread, with the finished result.
  using Done = std::function<void(SpawnResult&)>;

  // Takes over child's fds and pid. Returns nullptr with *uvErr set when a
  // handle cannot start; the child is then killed and reaped.
  static SpawnWatch* Start(uv_loop_t* loop, const SpawnRequest& request, StartedChild* child, Done done, int* uvErr);

  // Environment teardown: kills and reaps the child, closes everything and
  // never calls done.
  void Abort();

 private:
  // One fd watched by a uv_poll_t; the fd is closed right after its handle.
  struct Polled {
    uv_poll_t poll;
    int fd = -1;
    int events = 0;  // what the poll waits for now
    bool open = false;
  };

  SpawnWatch(uv_loop_t* loop, const SpawnRequest& request, StartedChild* child, Done done);
  int Begin();
  int OpenPoll(Polled* p, int fd);
  void Watch(Polled* p, int events);
  void ClosePolled(Polled* p);
  static void PollCb(uv_poll_t* handle, int status, int events);
  static void TimerCb(uv_timer_t* handle);
  static void CloseCb(uv_handle_t* handle);
  void OnPoll(uv_poll_t* handle, int status);
  void OnTimer(uv_timer_t* handle);
  void ReadOutput(Polled* p, std::string* into);
  void WriteStdin();
  void TakeFeed();
  void UpdateStdin();
  void KillGroup();
  bool ChildExited();
  void OnChildExit();
  void Finish(int status);
  void CloseAll();
  void DeleteIfClosed();

  uv_loop_t* loop_;
  std::shared_ptr<StdinFeed> feed_;
  std::string stdinData_;  // the request's bytes
  std::string fed_;        // or the feed's, gathered as they come
  bool inputComplete_;
  size_t written_ = 0;
  int64_t calledAtMs_;
  int64_t deadlineMs_;
  size_t maxOutput_;
  pid_t pid_;
  bool killed_ = false;   // the deadline or the limit killed the group
  bool finished_ = false; // done was called (or Abort)
  SpawnResult result_;
  Done done_;

  Polled in_, out_, err_, exit_, feedPoll_;
  uv_timer_t deadlineTimer_;
  uv_timer_t reapTimer_;   // without a pidfd: checks for the exit every few ms
  bool reapTimerOpen_ = false;
  bool deadlineOpen_ = false;
  int openHandles_ = 0;
};

}  // namespace podnet
