// JS surface of native/spawn: spawnInNetns(netnsFd, argv, env, stdin,
// timeoutMs, maxOutputBytes, feed?) -> Promise<result>, where feed is a
// StdinFeed whose bytes become stdin as they are written. Arguments are
// checked in lib/spawn.ts; here only their types are converted. A worker
// starts the program; the loop watches it from then on.
#include "spawn/spawn_binding.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>

#include "spawn/spawn_run.h"
#include "spawn/stdin_feed.h"
#include "util/js_error.h"

namespace podnet {

namespace {

std::vector<std::string> StringArray(const Napi::Value& value) {
  Napi::Array array = value.As<Napi::Array>();
  std::vector<std::string> out;
  out.reserve(array.Length());
  for (uint32_t i = 0; i < array.Length(); i++) out.push_back(array.Get(i).As<Napi::String>().Utf8Value());
  return out;
}

Napi::Object ResultObject(Napi::Env env, const SpawnResult& result) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("exitCode", result.signal.empty() ? Napi::Value(Napi::Number::New(env, result.exitCode)) : env.Null());
  out.Set("signal", result.signal.empty() ? env.Null() : Napi::Value(Napi::String::New(env, result.signal)));
  out.Set("stdout", Napi::Buffer<char>::Copy(env, result.stdoutData.data(), result.stdoutData.size()));
  out.Set("stderr", Napi::Buffer<char>::Copy(env, result.stderrData.data(), result.stderrData.size()));
  out.Set("timedOut", result.timedOut);
  out.Set("outputLimitExceeded", result.outputLimitExceeded);
  out.Set("path", result.path);
  out.Set("durationMs", result.durationMs);
  return out;
}

// A run being watched on the loop: the promise to settle when the child is
// reaped, and the hook that kills the child if the environment goes first.
struct WatchedRun {
  Napi::Env env;
  Napi::Promise::Deferred deferred;
  Napi::AsyncContext context;
  SpawnWatch* watch = nullptr;

  WatchedRun(Napi::Env e, Napi::Promise::Deferred d) : env(e), deferred(d), context(e, "podnet:spawnInNetns") {}

  static void OnEnvCleanup(void* arg) {
    auto* run = static_cast<WatchedRun*>(arg);
    if (run->watch != nullptr) run->watch->Abort();
    delete run;
  }

  void Settle(SpawnResult& result) {
    napi_remove_env_cleanup_hook(env, OnEnvCleanup, this);
    watch = nullptr;
    try {
      Napi::HandleScope scope(env);
      // Settling outside any JS frame: the scope runs the microtasks (the
      // awaiting code) when it closes, as Node does after its callbacks.
      Napi::CallbackScope callbackScope(env, context);
      try {
        deferred.Resolve(ResultObject(env, result));
      } catch (const Napi::Error& e) {
        deferred.Reject(e.Value());
      }
    } catch (...) {
      // No JS frame to throw into and the scopes failed: nothing else to do.
    }
    delete this;
  }
};

// Only the start (resolving the binary, vfork, setns and execve in the child)
// runs on a libuv worker; once the program runs it holds no thread, the loop
// watches it (SpawnWatch).
class StartWorker final : public Napi::AsyncWorker {
 public:
  StartWorker(Napi::Env env, std::unique_ptr<SpawnRequest> request)
      : Napi::AsyncWorker(env, "podnet:spawnStart"), deferred_(Napi::Promise::Deferred::New(env)), request_(std::move(request)) {}

  ~StartWorker() override {
    if (request_->netnsFd >= 0) close(request_->netnsFd);
  }

  Napi::Promise Promise() { return deferred_.Promise(); }
  SpawnRequest& request() { return *request_; }

 private:
  void Execute() override {
    try {
      error_ = StartProgram(*request_, &child_);
    } catch (const std::bad_alloc&) {
      error_ = SystemError(ENOMEM, "malloc");
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    if (error_.failed()) {
      deferred_.Reject(MakeError(env, error_));
      return;
    }
    uv_loop_t* loop = nullptr;
    if (napi_get_uv_event_loop(env, &loop) != napi_ok) {
      Abandon();
      deferred_.Reject(MakeError(env, SystemError(EINVAL, "uv_loop")));
      return;
    }
    auto* run = new WatchedRun(env, deferred_);
    int uvErr = 0;
    run->watch = SpawnWatch::Start(loop, *request_, &child_, [run](SpawnResult& result) { run->Settle(result); }, &uvErr);
    if (run->watch == nullptr) {
      delete run;
      deferred_.Reject(MakeError(env, SystemError(-uvErr, "uv_poll_init").With("path", child_.path)));
      return;
    }
    napi_add_env_cleanup_hook(env, WatchedRun::OnEnvCleanup, run);
  }

  void OnError(const Napi::Error& e) override {
    Abandon();
    deferred_.Reject(e.Value());
  }

  // A started child nobody will watch: killed and reaped here.
  void Abandon() {
    if (child_.pid < 0) return;
    kill(-child_.pid, SIGKILL);
    kill(child_.pid, SIGKILL);
    while (waitpid(child_.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    for (int fd : {child_.stdinFd, child_.stdoutFd, child_.stderrFd, child_.pidFd}) {
      if (fd >= 0) close(fd);
    }
    child_.pid = -1;
  }

  Napi::Promise::Deferred deferred_;
  std::unique_ptr<SpawnRequest> request_;
  StartedChild child_;
  ErrorInfo error_;
};

// new StdinFeed(); feed.write(buffer); feed.end(). The running program
// holds its own reference to the feed, so the JS object may go away first.
class StdinFeedWrap : public Napi::ObjectWrap<StdinFeedWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "StdinFeed",
                       {
                           InstanceMethod<&StdinFeedWrap::Write>("write"),
                           InstanceMethod<&StdinFeedWrap::End>("end"),
                           InstanceMethod<&StdinFeedWrap::Close>("close"),
                       });
  }

  explicit StdinFeedWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<StdinFeedWrap>(info) {
    ErrorInfo err = StdinFeed::Create(&feed_);
    if (err.failed()) ThrowError(info.Env(), err);
  }

  const std::shared_ptr<StdinFeed>& feed() const { return feed_; }

 private:
  Napi::Value Write(const Napi::CallbackInfo& info) {
    auto data = info[0].As<Napi::Buffer<char>>();
    feed_->Write(data.Data(), data.Length());
    return info.Env().Undefined();
  }

  Napi::Value End(const Napi::CallbackInfo& info) {
    feed_->End();
    return info.Env().Undefined();
  }

  // For a feed no program was started with (its arguments were refused).
  Napi::Value Close(const Napi::CallbackInfo& info) {
    feed_->Close();
    return info.Env().Undefined();
  }

  std::shared_ptr<StdinFeed> feed_;
};

Napi::Value SpawnInNetns(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto request = std::make_unique<SpawnRequest>();
  // The deadline counts from the call, whatever waits before the start.
  request->calledAtMs = MonotonicMs();
  int netnsFd = info[0].As<Napi::Number>().Int32Value();
  if (netnsFd >= 0) {
    // A private duplicate: the caller may close its handle (and the number be
    // reused for another file) while the child is being started.
    request->netnsFd = fcntl(netnsFd, F_DUPFD_CLOEXEC, 0);
    if (request->netnsFd < 0) ThrowError(env, SystemError(errno, "fcntl"));
  }
  auto worker = std::make_unique<StartWorker>(env, std::move(request));
  SpawnRequest& req = worker->request();
  req.argv = StringArray(info[1]);
  req.env = StringArray(info[2]);
  if (info[3].IsBuffer()) {
    auto input = info[3].As<Napi::Buffer<char>>();
    req.stdinData.assign(input.Data(), input.Length());
  }
  req.timeoutMs = info[4].As<Napi::Number>().Int64Value();
  req.maxOutputBytes = static_cast<size_t>(info[5].As<Napi::Number>().Int64Value());
  if (info.Length() > 6 && info[6].IsObject()) {
    req.stdinFeed = StdinFeedWrap::Unwrap(info[6].As<Napi::Object>())->feed();
  }
  Napi::Promise promise = worker->Promise();
  worker.release()->Queue();  // the worker deletes itself after OnOK/OnError
  return promise;
}

}  // namespace

void RegisterSpawn(Napi::Env env, Napi::Object exports) {
  exports.Set("spawnInNetns", Napi::Function::New(env, SpawnInNetns, "spawnInNetns"));
  exports.Set("StdinFeed", StdinFeedWrap::Define(env));
}

}  // namespace podnet
