#include "netns/hop_promise.h"

namespace podnet {

HopReturn& HopReturn::Of(Napi::Env env) {
  AddonData* data = env.GetInstanceData<AddonData>();
  if (data->hopReturn == nullptr) {
    auto* back = new HopReturn();
    back->fn_ = Function::New(env, "podnet:hop", 0, 1, back);
    back->fn_.Unref(env);
    // Runs before the function's own teardown (hooks run in reverse order of registration): after it, hops that
    // come back are dropped here instead of reaching a function that is being torn down.
    env.AddCleanupHook([back] {
      std::lock_guard<std::mutex> lock(back->m_);
      back->closed_ = true;
    });
    data->hopReturn = back;
  }
  return *data->hopReturn;
}

void HopReturn::Out(Napi::Env env) {
  if (out_++ == 0) fn_.Ref(env);
}

void HopReturn::Back(std::unique_ptr<ReturningHop> job) {
  std::lock_guard<std::mutex> lock(m_);
  if (!closed_ && fn_.NonBlockingCall(job.get()) == napi_ok) {
    job.release();
    return;
  }
  job->Abandon();
}

void HopReturn::Deliver(Napi::Env env, Napi::Function, HopReturn* self, ReturningHop* raw) {
  std::unique_ptr<ReturningHop> job(raw);
  if (env == nullptr) {
    job->Abandon();
    return;
  }
  if (--self->out_ == 0) self->fn_.Unref(env);
  try {
    job->Settle(env);
  } catch (const Napi::Error&) {
    // Only an instance that is being terminated (a worker's terminate()) refuses to settle a promise: it and its
    // promises are going, and a C++ exception must not leave this callback.
  }
}

}  // namespace podnet
