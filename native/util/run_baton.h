// How a binding runs one operation's baton: on a libuv worker
// (PromiseWorker), or inline on the JS thread for the sync API and for JS
// peers, which must be driven from the thread that owns them. Either way the
// caller gets what it asked for: a value (sync) or a promise.
#pragma once

#include <napi.h>

#include <memory>
#include <mutex>
#include <utility>

#include "util/js_error.h"
#include "util/promise_worker.h"

namespace podnet {

// What every operation's baton on a protocol session shares. Execute() takes
// the session for the operation (SessionT::Lock refuses re-entry from a JS
// peer) and runs the baton's own Locked() under it, on a worker or on the JS
// thread alike.
template <typename Derived, typename SessionT>
struct SessionBaton {
  std::shared_ptr<SessionT> session;
  ErrorInfo error;
  void Execute() {
    std::unique_lock<std::mutex> lock;
    if ((error = session->Lock(&lock)).failed()) return;
    static_cast<Derived*>(this)->Locked();
  }
};

template <typename Baton>
Napi::Value RunBaton(Napi::Env env, std::unique_ptr<Baton> baton, bool sync, const char* name) {
  if (!sync && !baton->session->engine().transport().NeedsJsThread()) {
    return PromiseWorker<Baton>::Queue(env, name, std::move(baton));
  }
  // JS peers must be driven from this thread; the sync API blocks it by design.
  Napi::Value failure;
  try {
    baton->Execute();
  } catch (const Napi::Error& e) {
    failure = e.Value();
  }
  if (failure.IsEmpty() && baton->error.failed()) failure = MakeError(env, baton->error);
  if (sync) {
    if (!failure.IsEmpty()) throw Napi::Error(env, failure);
    return baton->Result(env);
  }
  auto deferred = Napi::Promise::Deferred::New(env);
  if (!failure.IsEmpty()) {
    deferred.Reject(failure);
  } else {
    deferred.Resolve(baton->Result(env));
  }
  return deferred.Promise();
}

}  // namespace podnet
