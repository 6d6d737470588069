// JS surface of native/ipset: an IpsetHandle class owning one Session (one
// netlink socket, or a JS peer) through a slot it shares with its sync
// channels (sync_channel.h). Every operation is a baton that runs
// synchronously (the *Sync API), inline on the JS thread (JS peers), or on a
// libuv worker; records cross the boundary as one Buffer per call.
#include "ipset/ipset_binding.h"

#include <errno.h>
#include <linux/netlink.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ipset/constants.h"
#include "ipset/session.h"
#include "ipset/session_slot.h"
#include "ipset/sync_channel.h"
#include "netlink/js_transport.h"
#include "util/constants_object.h"
#include "util/js_error.h"
#include "util/promise_worker.h"
#include "util/run_baton.h"

namespace podnet {

using ipset::Session;
using SessionPtr = std::shared_ptr<Session>;

template <typename Derived>
using BatonBase = SessionBaton<Derived, Session>;

static Napi::Object HeaderObject(Napi::Env env, const ipset::SetHeader& h) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("name", h.name);
  o.Set("type", h.typeName);
  o.Set("family", h.family);
  o.Set("revision", h.revision);
  o.Set("hasData", h.hasData);
  o.Set("hashsize", h.hashsize);
  o.Set("maxelem", h.maxelem);
  o.Set("references", h.references);
  o.Set("elements", h.elements);
  o.Set("memsize", h.memsize);
  o.Set("bucketsize", h.bucketsize);
  o.Set("cadtFlags", h.cadtFlags);
  if (h.hasTimeout) o.Set("timeout", h.timeout);
  o.Set("decoded", h.decoded);
  return o;
}

static Napi::Buffer<uint8_t> CopyBytes(Napi::Env env, const std::vector<uint8_t>& bytes) {
  return Napi::Buffer<uint8_t>::Copy(env, bytes.data(), bytes.size());
}

struct ProtocolBaton : BatonBase<ProtocolBaton> {
  uint8_t version = 0;
  void Locked() { error = session->Protocol(&version); }
  Napi::Value Result(Napi::Env env) { return Napi::Number::New(env, version); }
};

struct CreateBaton : BatonBase<CreateBaton> {
  ipset::CreateSpec spec;
  void Locked() { error = session->Create(spec); }
  Napi::Value Result(Napi::Env env) { return env.Undefined(); }
};

struct SimpleBaton : BatonBase<SimpleBaton> {
  uint8_t cmd = 0;
  std::string name, name2;
  bool excl = true;
  void Locked() { error = session->Simple(cmd, name, name2, excl); }
  Napi::Value Result(Napi::Env env) { return env.Undefined(); }
};

struct AdtBaton : BatonBase<AdtBaton> {
  uint8_t cmd = 0;
  std::string name;
  // The records are read in place, not copied: the JS side does not write
  // the buffer until the call settles (its queue runs one call at a time);
  // the reference keeps it alive until the baton is destroyed on the JS
  // thread. Copying 100k records held the event loop for milliseconds.
  Napi::Reference<Napi::Uint8Array> keep;
  const uint8_t* records = nullptr;
  size_t recordsLen = 0;
  bool excl = true;
  uint32_t applied = 0;
  std::vector<ipset::EntryFailure> failures;
  void Locked() { error = session->Adt(cmd, name, records, recordsLen, excl, &applied, &failures); }
  Napi::Value Result(Napi::Env env) {
    // [applied, index, error, index, error, ...]: one typed array, no object and no property keys (a single add's
    // answer is on the hot path of addSync and coalesced adds).
    Napi::Uint32Array f = Napi::Uint32Array::New(env, 1 + failures.size() * 2);
    f[0] = applied;
    for (size_t i = 0; i < failures.size(); i++) {
      f[1 + i * 2] = failures[i].index;
      f[2 + i * 2] = static_cast<uint32_t>(failures[i].error);
    }
    return f;
  }
};

struct TestBaton : BatonBase<TestBaton> {
  std::string name;
  ipset::Record entry;
  bool member = false;
  void Locked() { error = session->Test(name, entry, &member); }
  Napi::Value Result(Napi::Env env) { return Napi::Boolean::New(env, member); }
};

struct ListBaton : BatonBase<ListBaton> {
  std::string name;
  uint32_t flags = 0;
  ipset::ListResult result;
  void Locked() { error = session->List(name, flags, &result); }
  Napi::Value Result(Napi::Env env) {
    Napi::Object o = Napi::Object::New(env);
    Napi::Array sets = Napi::Array::New(env, result.sets.size());
    for (size_t i = 0; i < result.sets.size(); i++) sets.Set(static_cast<uint32_t>(i), HeaderObject(env, result.sets[i]));
    o.Set("sets", sets);
    o.Set("records", CopyBytes(env, result.records));
    o.Set("count", result.count);
    return o;
  }
};

struct EntriesBaton : BatonBase<EntriesBaton> {
  bool start = false;
  std::string name;
  uint32_t max = 0;
  ipset::ListResult result;
  bool done = false;
  void Locked() {
    if (start) {
      error = session->StartEntries(name);
      if (error.failed()) return;
    }
    error = session->NextEntries(max, &result, &done);
  }
  Napi::Value Result(Napi::Env env) {
    Napi::Object o = Napi::Object::New(env);
    if (!result.sets.empty()) o.Set("header", HeaderObject(env, result.sets.front()));
    o.Set("records", CopyBytes(env, result.records));
    o.Set("count", result.count);
    o.Set("done", done);
    return o;
  }
};

class IpsetHandle : public Napi::ObjectWrap<IpsetHandle> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "IpsetHandle",
                       {
                           InstanceMethod<&IpsetHandle::Protocol>("protocol"),
                           InstanceMethod<&IpsetHandle::Create>("create"),
                           InstanceMethod<&IpsetHandle::Simple>("simple"),
                           InstanceMethod<&IpsetHandle::Adt>("adt"),
                           InstanceMethod<&IpsetHandle::SyncChannel>("syncChannel"),
                           InstanceMethod<&IpsetHandle::Test>("test"),
                           InstanceMethod<&IpsetHandle::List>("list"),
                           InstanceMethod<&IpsetHandle::Entries>("entries"),
                           InstanceMethod<&IpsetHandle::SetTimeout>("setTimeout"),
                           InstanceMethod<&IpsetHandle::Close>("close"),
                       });
  }

  // new IpsetHandle(netnsFd, timeoutMs, exchange?, receiveBufferBytes?)
  explicit IpsetHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<IpsetHandle>(info) {
    int timeoutMs = info[1].As<Napi::Number>().Int32Value();
    slot_->session = std::make_shared<Session>(nl::TransportFromArgs(info, NETLINK_NETFILTER), timeoutMs);
  }

 private:
  SessionPtr Live(Napi::Env env) { return LiveSession(env, *slot_); }

  Napi::Value Protocol(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<ProtocolBaton>();
    b->session = Live(info.Env());
    return RunBaton(info.Env(), std::move(b), info[0].ToBoolean(), "podnet:ipsetProtocol");
  }

  // create({ name, type, family, hashsize?, maxelem?, timeout?, cadtFlags, exist }, sync)
  Napi::Value Create(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<CreateBaton>();
    b->session = Live(info.Env());
    Napi::Object o = info[0].As<Napi::Object>();
    b->spec.name = o.Get("name").As<Napi::String>();
    b->spec.typeName = o.Get("type").As<Napi::String>();
    b->spec.family = static_cast<uint8_t>(o.Get("family").As<Napi::Number>().Uint32Value());
    auto opt = [&](const char* key, bool* has, uint32_t* v) {
      Napi::Value x = o.Get(key);
      if (x.IsNumber()) {
        *has = true;
        *v = x.As<Napi::Number>().Uint32Value();
      }
    };
    opt("hashsize", &b->spec.hasHashsize, &b->spec.hashsize);
    opt("maxelem", &b->spec.hasMaxelem, &b->spec.maxelem);
    opt("timeout", &b->spec.hasTimeout, &b->spec.timeout);
    b->spec.cadtFlags = o.Get("cadtFlags").As<Napi::Number>().Uint32Value();
    b->spec.exist = o.Get("exist").ToBoolean();
    return RunBaton(info.Env(), std::move(b), info[1].ToBoolean(), "podnet:ipsetCreate");
  }

  // simple(cmd, name, name2, excl, sync)
  Napi::Value Simple(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<SimpleBaton>();
    b->session = Live(info.Env());
    b->cmd = static_cast<uint8_t>(info[0].As<Napi::Number>().Uint32Value());
    b->name = info[1].As<Napi::String>();
    b->name2 = info[2].As<Napi::String>();
    b->excl = info[3].ToBoolean();
    return RunBaton(info.Env(), std::move(b), info[4].ToBoolean(), "podnet:ipsetSimple");
  }

  // adt(cmd, name, records, excl, sync): records must not be written until the promise settles.
  Napi::Value Adt(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<AdtBaton>();
    b->session = Live(info.Env());
    b->cmd = static_cast<uint8_t>(info[0].As<Napi::Number>().Uint32Value());
    b->name = info[1].As<Napi::String>();
    Napi::Uint8Array records = info[2].As<Napi::Uint8Array>();
    b->records = records.Data();
    b->recordsLen = records.ByteLength();
    b->keep = Napi::Persistent(records);
    b->excl = info[3].ToBoolean();
    return RunBaton(info.Env(), std::move(b), info[4].ToBoolean(), "podnet:ipsetAdt");
  }

  // syncChannel(frame) -> the function that sends the ADD or DEL its frame
  // holds (sync_channel.h).
  Napi::Value SyncChannel(const Napi::CallbackInfo& info) {
    return NewSyncChannel(info.Env(), slot_, info[0].As<Napi::Uint8Array>());
  }

  // test(name, record, sync)
  Napi::Value Test(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto b = std::make_unique<TestBaton>();
    b->session = Live(env);
    b->name = info[0].As<Napi::String>();
    Napi::Uint8Array bytes = info[1].As<Napi::Uint8Array>();
    ipset::RecordReader reader(bytes.Data(), bytes.ByteLength());
    bool bad = false;
    if (!reader.Next(&b->entry, &bad)) {
      ErrorInfo err = SystemError(EINVAL, "encode");
      err.message = "malformed entry record";
      ThrowError(env, err);
    }
    return RunBaton(env, std::move(b), info[2].ToBoolean(), "podnet:ipsetTest");
  }

  // list(name, flags, sync)
  Napi::Value List(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<ListBaton>();
    b->session = Live(info.Env());
    b->name = info[0].As<Napi::String>();
    b->flags = info[1].As<Napi::Number>().Uint32Value();
    return RunBaton(info.Env(), std::move(b), info[2].ToBoolean(), "podnet:ipsetList");
  }

  // entries(name | null, maxRecords): name starts the dump, null continues it.
  Napi::Value Entries(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<EntriesBaton>();
    b->session = Live(info.Env());
    b->start = info[0].IsString();
    if (b->start) b->name = info[0].As<Napi::String>();
    b->max = info[1].As<Napi::Number>().Uint32Value();
    return RunBaton(info.Env(), std::move(b), false, "podnet:ipsetEntries");
  }

  Napi::Value SetTimeout(const Napi::CallbackInfo& info) {
    SessionPtr s = Live(info.Env());
    std::unique_lock<std::mutex> lock;
    ErrorInfo err = s->Lock(&lock);
    if (err.failed()) ThrowError(info.Env(), err);
    s->engine().set_timeout(info[0].As<Napi::Number>().Int32Value());
    return info.Env().Undefined();
  }

  // Pending async work keeps its own reference; the socket closes when it ends.
  Napi::Value Close(const Napi::CallbackInfo& info) {
    slot_->session.reset();
    return info.Env().Undefined();
  }

  SlotPtr slot_ = std::make_shared<SessionSlot>();
};

void RegisterIpset(Napi::Env env, Napi::Object exports) {
  exports.Set("IpsetHandle", IpsetHandle::Define(env));
  exports.Set("ipsetCommands",
              ConstantsObject(env, {{"destroy", ipset::IPSET_CMD_DESTROY}, {"flush", ipset::IPSET_CMD_FLUSH},
                                    {"rename", ipset::IPSET_CMD_RENAME}, {"swap", ipset::IPSET_CMD_SWAP},
                                    {"add", ipset::IPSET_CMD_ADD}, {"del", ipset::IPSET_CMD_DEL}}));
  ExportSyncFrame(env, exports);
}

}  // namespace podnet
