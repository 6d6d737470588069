// Starting a child process inside a network namespace: vfork, setns in the
// child, execve. Everything the child needs is prepared before the vfork,
// because in the child of a threaded process (Node) only async-signal-safe
// calls are allowed: another thread may have held the malloc lock.
//
// vfork rather than fork: copying Node's page tables made every run cost about
// 12 ms on a 2-core VM, against about 3.5 ms with vfork. The price is that the
// child borrows the calling thread's memory until execve: it only makes system
// calls, writes nothing the parent reads except through the report pipe, and
// runs with every signal blocked until it has reset all handlers to SIG_DFL, so
// no handler of the parent ever runs on the shared memory.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "util/sys_error.h"

namespace podnet {

// A fully prepared exec: the resolved binary path and NUL-terminated argv/envp
// arrays that point into strings owned by this struct.
class PreparedExec {
 public:
  PreparedExec(std::string path, std::vector<std::string> argv, std::vector<std::string> env);
  PreparedExec(const PreparedExec&) = delete;
  PreparedExec& operator=(const PreparedExec&) = delete;

  const std::string& path() const { return path_; }
  char* const* argv() const { return argvPtrs_.data(); }
  char* const* envp() const { return envPtrs_.data(); }

 private:
  std::string path_;
  std::vector<std::string> argv_;
  std::vector<std::string> env_;
  std::vector<char*> argvPtrs_;
  std::vector<char*> envPtrs_;
};

// The directories searched for a bare program name, in order. The caller's
// PATH is never used: a writable directory early in it would let anyone who
// can write there run code as root inside a pod.
extern const char* const kSafePath;

// Resolves name to an executable regular file: as given when it contains '/',
// else the first match in kSafePath. On failure returns ENOENT/EACCES with
// syscall "execve" and the name as path.
ErrorInfo ResolveProgram(const std::string& name, std::string* resolved);

// The parent's ends of the three standard streams of a started child.
struct ChildPipes {
  int stdinFd = -1;   // write end
  int stdoutFd = -1;  // read end
  int stderrFd = -1;  // read end
};

// Starts a child (vfork) that joins netnsFd's network namespace (when netnsFd >= 0),
// becomes the leader of its own process group (so a timeout can kill whatever
// it started too), and execs the prepared program with pipes as stdin, stdout
// and stderr and no other fd open. Returns once the exec has succeeded or
// failed: a failed setns or execve is reported as an error here (with its
// syscall and errno) and the child is already reaped, so "could not start"
// is never confused with "the program exited with status 127". All returned
// fds are close-on-exec and non-blocking.
ErrorInfo StartChild(const PreparedExec& exec, int netnsFd, pid_t* pid, ChildPipes* pipes);

}  // namespace podnet
