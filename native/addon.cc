// Module entry: per-instance data, the error factory hook, and one Register*
// call per native layer. Bindings live next to the layer they expose.
#include <napi.h>

#include "ipset/ipset_binding.h"
#include "netns/hop_promise.h"
#include "netns/netns_binding.h"
#include "nftables/nftables_binding.h"
#include "rtnetlink/rtnetlink_binding.h"
#include "spawn/spawn_binding.h"
#include "unix/unix_binding.h"
#include "util/close_later.h"
#include "util/js_error.h"
#include "xtables/xtables_binding.h"

namespace podnet {

// What the loaded binary was built with, so the sanitizer run can prove it
// really loaded the sanitizer build.
static Napi::Value BuildInfo(const Napi::CallbackInfo& info) {
  Napi::Object out = Napi::Object::New(info.Env());
#if defined(__SANITIZE_ADDRESS__)
  out.Set("asan", true);
#else
  out.Set("asan", false);
#endif
  out.Set("napiVersion", NAPI_VERSION);
  return out;
}

// How many fds (netfilter sockets) the closer thread has yet to close: tests wait for 0 before counting fds.
static Napi::Value PendingClosesOf(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), PendingCloses()); }

// A promise settled on the JS thread once the closer thread has closed every fd handed to it before the call, through
// the path finished hops take back (HopReturn).
class ClosesSettled final : public ReturningHop {
 public:
  explicit ClosesSettled(Napi::Env env) : deferred(Napi::Promise::Deferred::New(env)) {}
  void Inside() override {}
  void Finished(std::unique_ptr<HopJob>) override {}
  void Settle(Napi::Env env) override {
    Napi::HandleScope scope(env);
    deferred.Resolve(env.Undefined());
  }
  void Abandon() override {}
  Napi::Promise::Deferred deferred;
};

static Napi::Value ClosesSettledOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto job = std::make_unique<ClosesSettled>(env);
  Napi::Promise promise = job->deferred.Promise();
  HopReturn& back = HopReturn::Of(env);
  back.Out(env);
  ReturningHop* raw = job.release();
  WhenClosed([&back, raw] { back.Back(std::unique_ptr<ReturningHop>(raw)); });
  return promise;
}

static Napi::Value SetErrorFactory(const Napi::CallbackInfo& info) {
  AddonData* data = info.Env().GetInstanceData<AddonData>();
  data->errorFactory = Napi::Persistent(info[0].As<Napi::Function>());
  return info.Env().Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  env.SetInstanceData(new AddonData());
  exports.Set("setErrorFactory", Napi::Function::New(env, SetErrorFactory, "setErrorFactory"));
  exports.Set("buildInfo", Napi::Function::New(env, BuildInfo, "buildInfo"));
  exports.Set("pendingCloses", Napi::Function::New(env, PendingClosesOf, "pendingCloses"));
  exports.Set("closesSettled", Napi::Function::New(env, ClosesSettledOf, "closesSettled"));
  RegisterNetns(env, exports);
  RegisterIpset(env, exports);
  RegisterRtnetlink(env, exports);
  RegisterNftables(env, exports);
  RegisterSpawn(env, exports);
  RegisterUnix(env, exports);
  RegisterXtables(env, exports);
  return exports;
}

}  // namespace podnet

static Napi::Object InitAddon(Napi::Env env, Napi::Object exports) { return podnet::Init(env, exports); }

NODE_API_MODULE(podnet_addon, InitAddon)
