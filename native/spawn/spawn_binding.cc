// JS surface of native/spawn: spawnInNetns(netnsFd, argv, env, stdin,
// timeoutMs, maxOutputBytes, feed?) -> Promise<result>, where feed is a
// StdinFeed whose bytes become stdin as they are written. Arguments are
// checked in lib/spawn.ts; here only their types are converted.
#include "spawn/spawn_binding.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <memory>

#include "spawn/spawn_run.h"
#include "spawn/stdin_feed.h"
#include "util/js_error.h"
#include "util/promise_worker.h"

namespace podnet {

namespace {

std::vector<std::string> StringArray(const Napi::Value& value) {
  Napi::Array array = value.As<Napi::Array>();
  std::vector<std::string> out;
  out.reserve(array.Length());
  for (uint32_t i = 0; i < array.Length(); i++) out.push_back(array.Get(i).As<Napi::String>().Utf8Value());
  return out;
}

struct SpawnBaton {
  SpawnRequest request;
  SpawnResult result;
  ErrorInfo error;

  ~SpawnBaton() {
    if (request.netnsFd >= 0) close(request.netnsFd);
  }

  void Execute() { error = RunToEnd(request, &result); }

  Napi::Value Result(Napi::Env env) {
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
  auto baton = std::make_unique<SpawnBaton>();
  int netnsFd = info[0].As<Napi::Number>().Int32Value();
  if (netnsFd >= 0) {
    // A private duplicate: the caller may close its handle (and the number be
    // reused for another file) while the child is being started.
    baton->request.netnsFd = fcntl(netnsFd, F_DUPFD_CLOEXEC, 0);
    if (baton->request.netnsFd < 0) ThrowError(env, SystemError(errno, "fcntl"));
  }
  baton->request.argv = StringArray(info[1]);
  baton->request.env = StringArray(info[2]);
  if (info[3].IsBuffer()) {
    auto input = info[3].As<Napi::Buffer<char>>();
    baton->request.stdinData.assign(input.Data(), input.Length());
  }
  baton->request.timeoutMs = info[4].As<Napi::Number>().Int64Value();
  baton->request.maxOutputBytes = static_cast<size_t>(info[5].As<Napi::Number>().Int64Value());
  if (info.Length() > 6 && info[6].IsObject()) {
    baton->request.stdinFeed = StdinFeedWrap::Unwrap(info[6].As<Napi::Object>())->feed();
  }
  return PromiseWorker<SpawnBaton>::Queue(env, "podnet:spawnInNetns", std::move(baton));
}

}  // namespace

void RegisterSpawn(Napi::Env env, Napi::Object exports) {
  exports.Set("spawnInNetns", Napi::Function::New(env, SpawnInNetns, "spawnInNetns"));
  exports.Set("StdinFeed", StdinFeedWrap::Define(env));
}

}  // namespace podnet
