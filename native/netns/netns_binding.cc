// JS surface of native/netns: open/close/identify, create, and the probe used to
// prove that namespace-scoped work never leaves a thread in another namespace.
#include "netns/netns_binding.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>

#include "netns/in_netns.h"
#include "netns/netns_create.h"
#include "netns/netns_open.h"
#include "util/js_error.h"
#include "util/promise_worker.h"

namespace podnet {

static Napi::Object IdentityObject(Napi::Env env, int fd, const NetnsIdentity& id) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("fd", fd);
  // Device and inode numbers fit well inside 2^53 on Linux.
  out.Set("dev", static_cast<double>(id.dev));
  out.Set("ino", static_cast<double>(id.ino));
  return out;
}

static Napi::Value NetnsOpen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path = info[0].As<Napi::String>().Utf8Value();
  int fd = -1;
  NetnsIdentity id;
  ErrorInfo err = OpenNetns(path, &fd, &id);
  if (err.failed()) ThrowError(env, err);
  return IdentityObject(env, fd, id);
}

static Napi::Value NetnsIdentify(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = info[0].As<Napi::Number>().Int32Value();
  NetnsIdentity id;
  ErrorInfo err = IdentifyNetns(fd, &id);
  if (err.failed()) ThrowError(env, err);
  return IdentityObject(env, fd, id);
}

// A close-on-exec duplicate of the fd in info[0].
static int DupCloexec(const Napi::CallbackInfo& info) {
  int copy = fcntl(info[0].As<Napi::Number>().Int32Value(), F_DUPFD_CLOEXEC, 0);
  if (copy < 0) ThrowError(info.Env(), SystemError(errno, "fcntl"));
  return copy;
}

// A second fd on the namespace fd refers to, checked to be one: cheaper than reopening /proc/self/fd/N (no path
// walk through procfs), and just as independent of what any path names now.
static Napi::Value NetnsDup(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int copy = DupCloexec(info);
  NetnsIdentity id;
  ErrorInfo err = IdentifyNetns(copy, &id);
  if (err.failed()) {
    close(copy);
    ThrowError(env, err);
  }
  return IdentityObject(env, copy, id);
}

// A second fd on a namespace handle's own fd, which was identified when the handle was made: a duplicate refers to
// the same open file, so it needs no second check (three syscalls fewer per client a pod's enrollment opens).
static Napi::Value NetnsDupFd(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), DupCloexec(info));
}

static Napi::Value NetnsClose(const Napi::CallbackInfo& info) {
  int fd = info[0].As<Napi::Number>().Int32Value();
  // close() releases the fd even when it reports EINTR on Linux: never retry.
  if (close(fd) != 0 && errno == EBADF) ThrowError(info.Env(), SystemError(EBADF, "close"));
  return info.Env().Undefined();
}

// A new anonymous namespace. Off the JS thread: the kernel's setup of a namespace (every per-namespace subsystem's
// init) takes a while. The fd is the JS handle's from Result on; a baton dropped before then closes it.
struct NetnsCreateBaton {
  int fd = -1;
  NetnsIdentity id;
  ErrorInfo error;

  ~NetnsCreateBaton() {
    if (fd >= 0) close(fd);
  }
  void Execute() { error = CreateNetns(&fd, &id); }
  Napi::Value Result(Napi::Env env) {
    Napi::Value out = IdentityObject(env, fd, id);
    fd = -1;
    return out;
  }
};

static Napi::Value NetnsCreate(const Napi::CallbackInfo& info) {
  return PromiseWorker<NetnsCreateBaton>::Queue(info.Env(), "podnet:netnsCreate", std::make_unique<NetnsCreateBaton>());
}

// Inode of the network namespace that a thread running RunInNetns is in.
struct InodeInsideBaton {
  int fd = -1;
  double ino = 0;
  ErrorInfo error;

  void Execute() {
    error = RunInNetns(fd, [this] {
      struct stat st;
      if (stat("/proc/thread-self/ns/net", &st) != 0) {
        error = SystemError(errno, "stat");
        return;
      }
      ino = static_cast<double>(st.st_ino);
    });
  }
  Napi::Value Result(Napi::Env env) { return Napi::Number::New(env, ino); }
};

static Napi::Value NetnsInodeInside(const Napi::CallbackInfo& info) {
  auto baton = std::make_unique<InodeInsideBaton>();
  baton->fd = info[0].As<Napi::Number>().Int32Value();
  return PromiseWorker<InodeInsideBaton>::Queue(info.Env(), "podnet:netnsInodeInside", std::move(baton));
}

void RegisterNetns(Napi::Env env, Napi::Object exports) {
  exports.Set("netnsOpen", Napi::Function::New(env, NetnsOpen, "netnsOpen"));
  exports.Set("netnsIdentify", Napi::Function::New(env, NetnsIdentify, "netnsIdentify"));
  exports.Set("netnsDup", Napi::Function::New(env, NetnsDup, "netnsDup"));
  exports.Set("netnsDupFd", Napi::Function::New(env, NetnsDupFd, "netnsDupFd"));
  exports.Set("netnsClose", Napi::Function::New(env, NetnsClose, "netnsClose"));
  exports.Set("netnsCreate", Napi::Function::New(env, NetnsCreate, "netnsCreate"));
  exports.Set("netnsInodeInside", Napi::Function::New(env, NetnsInodeInside, "netnsInodeInside"));
}

}  // namespace podnet
