#include "spawn/spawn_child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <utility>

namespace podnet {

const char* const kSafePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

PreparedExec::PreparedExec(std::string path, std::vector<std::string> argv, std::vector<std::string> env)
    : path_(std::move(path)), argv_(std::move(argv)), env_(std::move(env)) {
  for (auto& arg : argv_) argvPtrs_.push_back(arg.data());
  argvPtrs_.push_back(nullptr);
  for (auto& var : env_) envPtrs_.push_back(var.data());
  envPtrs_.push_back(nullptr);
}

static bool IsExecutableFile(const std::string& path, int* err) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    *err = errno;
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *err = EACCES;
    return false;
  }
  if (access(path.c_str(), X_OK) != 0) {
    *err = errno;
    return false;
  }
  return true;
}

ErrorInfo ResolveProgram(const std::string& name, std::string* resolved) {
  if (name.find('/') != std::string::npos) {
    *resolved = name;
    return ErrorInfo{};
  }
  int firstErr = ENOENT;
  std::string dirs = kSafePath;
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + name;
    int err = 0;
    if (IsExecutableFile(candidate, &err)) {
      *resolved = candidate;
      return ErrorInfo{};
    }
    // A file that exists but cannot be run is more telling than "not found".
    if (err != ENOENT && err != ENOTDIR) firstErr = err;
    start = end + 1;
  }
  return SystemError(firstErr, "execve").With("path", name);
}

namespace {

// What a child that could not exec writes to the parent before _exit.
struct ChildFailure {
  int stage;  // 1 = setns, 2 = execve, 3 = preparing fds
  int err;
};

constexpr int kStageSetns = 1;
constexpr int kStageExecve = 2;
constexpr int kStageFds = 3;

// From vfork to execve: async-signal-safe calls only (no malloc, no locks),
// and no writes to memory the parent thread will read.
[[noreturn]] void ChildFail(int reportFd, int stage, int err) {
  ChildFailure failure{stage, err};
  ssize_t ignored = write(reportFd, &failure, sizeof failure);
  (void)ignored;
  _exit(127);
}

// Marks every fd >= 3 close-on-exec by walking /proc/self/fd with the raw
// getdents64 syscall (opendir would allocate). Used when close_range is
// missing (kernels before 5.9).
bool MarkAllCloexec(int keepFd) {
  int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  alignas(8) char buf[4096];
  for (;;) {
    long n = syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (n < 0) {
      close(dir);
      return false;
    }
    if (n == 0) break;
    for (long off = 0; off < n;) {
      auto* entry = reinterpret_cast<struct dirent64*>(buf + off);
      off += entry->d_reclen;
      int fd = 0;
      bool numeric = entry->d_name[0] != '\0';
      for (const char* p = entry->d_name; *p != '\0'; ++p) {
        if (*p < '0' || *p > '9') {
          numeric = false;
          break;
        }
        fd = fd * 10 + (*p - '0');
      }
      if (!numeric || fd < 3 || fd == dir || fd == keepFd) continue;
      fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
  }
  close(dir);
  return true;
}

// Closes every fd >= 3 except keepFd (the failure report pipe, itself
// close-on-exec), so nothing the parent holds (namespace fds, sockets of
// other pods, the libuv loop) survives into the program.
bool CloseOtherFds(int keepFd) {
  bool ok = true;
  if (keepFd > 3) ok = syscall(SYS_close_range, 3u, static_cast<unsigned>(keepFd - 1), 0u) == 0;
  if (ok) ok = syscall(SYS_close_range, static_cast<unsigned>(keepFd + 1), ~0u, 0u) == 0;
  if (ok) return true;
  return MarkAllCloexec(keepFd);
}

[[noreturn]] void RunChild(const PreparedExec& exec, int netnsFd, const sigset_t& emptyMask, int inFd, int outFd,
                           int errFd, int reportFd) {
  setpgid(0, 0);

  // Handlers installed by Node are meaningless in the child, and ignored
  // signals (Node ignores SIGPIPE) would stay ignored across execve.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; sig++) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    sigaction(sig, &dfl, nullptr);  // fails harmlessly for libc-reserved signals
  }
  sigprocmask(SIG_SETMASK, &emptyMask, nullptr);

  if (netnsFd >= 0 && setns(netnsFd, CLONE_NEWNET) != 0) ChildFail(reportFd, kStageSetns, errno);

  // Lift the pipe ends above 2 first so that no dup2 below can overwrite an
  // end that still has to be moved.
  int in = fcntl(inFd, F_DUPFD_CLOEXEC, 3);
  int out = fcntl(outFd, F_DUPFD_CLOEXEC, 3);
  int err = fcntl(errFd, F_DUPFD_CLOEXEC, 3);
  if (in < 0 || out < 0 || err < 0) ChildFail(reportFd, kStageFds, errno);
  if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) ChildFail(reportFd, kStageFds, errno);
  if (!CloseOtherFds(reportFd)) ChildFail(reportFd, kStageFds, errno);

  execve(exec.path().c_str(), exec.argv(), exec.envp());
  ChildFail(reportFd, kStageExecve, errno);
}

void CloseIfOpen(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

struct PipePair {
  int read = -1;
  int write = -1;
  ~PipePair() {
    CloseIfOpen(&read);
    CloseIfOpen(&write);
  }
  bool Open() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return false;
    read = fds[0];
    write = fds[1];
    return true;
  }
  int TakeRead() { return std::exchange(read, -1); }
  int TakeWrite() { return std::exchange(write, -1); }
};

bool SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

}  // namespace

ErrorInfo StartChild(const PreparedExec& exec, int netnsFd, pid_t* pid, ChildPipes* pipes) {
  PipePair in, out, err, report;
  if (!in.Open() || !out.Open() || !err.Open() || !report.Open()) return SystemError(errno, "pipe2");
  if (!SetNonBlocking(in.write) || !SetNonBlocking(out.read) || !SetNonBlocking(err.read)) {
    return SystemError(errno, "fcntl");
  }

  sigset_t all, old, empty;
  sigfillset(&all);
  sigemptyset(&empty);
  // No signal handler may run in the child before its dispositions are reset:
  // it would run on memory the child shares with this thread.
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t child = vfork();
  if (child == 0) RunChild(exec, netnsFd, empty, in.read, out.write, err.write, report.write);
  int forkErr = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (child < 0) return SystemError(forkErr, "fork").With("path", exec.path());

  // Also set here: a kill of the group right after StartChild returns must not
  // race the child's own setpgid. EACCES after the exec is expected and harmless.
  setpgid(child, child);
  CloseIfOpen(&in.read);
  CloseIfOpen(&out.write);
  CloseIfOpen(&err.write);
  CloseIfOpen(&report.write);

  ChildFailure failure{};
  ssize_t n;
  do {
    n = read(report.read, &failure, sizeof failure);
  } while (n < 0 && errno == EINTR);

  if (n < 0) {
    int readErr = errno;
    kill(child, SIGKILL);
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    return SystemError(readErr, "read").With("path", exec.path());
  }
  if (n > 0) {
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    const char* syscallName = failure.stage == kStageSetns ? "setns" : failure.stage == kStageExecve ? "execve" : "dup2";
    return SystemError(failure.err, syscallName).With("path", exec.path());
  }
  // n == 0: the report pipe closed on a successful execve.
  *pid = child;
  pipes->stdinFd = in.TakeWrite();
  pipes->stdoutFd = out.TakeRead();
  pipes->stderrFd = err.TakeRead();
  return ErrorInfo{};
}

}  // namespace podnet
