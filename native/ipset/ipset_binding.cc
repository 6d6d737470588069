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
#include "netlink/js_objects.h"
#include "netlink/js_reader.h"
#include "netlink/session_handle.h"
#include "util/constants_object.h"
#include "util/js_error.h"
#include "util/run_baton.h"

namespace podnet {

using ipset::Session;

template <typename Derived>
using IpsetBaton = SessionBaton<Derived, Session>;

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

struct ProtocolBaton : IpsetBaton<ProtocolBaton> {
  uint8_t version = 0;
  void Locked() { error = session->Protocol(&version); }
  Napi::Value Result(Napi::Env env) { return Napi::Number::New(env, version); }
};

struct CreateBaton : IpsetBaton<CreateBaton> {
  ipset::CreateSpec spec;
  void Locked() { error = session->Create(spec); }
  Napi::Value Result(Napi::Env env) { return env.Undefined(); }
};

struct WholeSetCommandBaton : IpsetBaton<WholeSetCommandBaton> {
  uint8_t cmd = 0;
  std::string name, name2;
  bool excl = true;
  void Locked() { error = session->WholeSetCommand(cmd, name, name2, excl); }
  Napi::Value Result(Napi::Env env) { return env.Undefined(); }
};

struct AdtBaton : IpsetBaton<AdtBaton> {
  uint8_t cmd = 0;
  std::string name;
  // The records are read in place, not copied: the JS side does not write
  // the buffer until the call settles (its queue runs one call at a time);
  // the reference keeps it alive until the baton is destroyed on the JS
  // thread. A copy of 100k records would hold the event loop for milliseconds.
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

struct TestBaton : IpsetBaton<TestBaton> {
  std::string name;
  ipset::Record entry;
  bool member = false;
  void Locked() { error = session->Test(name, entry, &member); }
  Napi::Value Result(Napi::Env env) { return Napi::Boolean::New(env, member); }
};

struct ListBaton : IpsetBaton<ListBaton> {
  std::string name;
  uint32_t flags = 0;
  ipset::ListResult result;
  void Locked() { error = session->List(name, flags, &result); }
  Napi::Value Result(Napi::Env env) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("sets", nl::ObjectArray<ipset::SetHeader, HeaderObject>(env, result.sets));
    o.Set("records", nl::BytesValue(env, result.records));
    o.Set("count", result.count);
    return o;
  }
};

struct EntriesBaton : IpsetBaton<EntriesBaton> {
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
    o.Set("records", nl::BytesValue(env, result.records));
    o.Set("count", result.count);
    o.Set("done", done);
    return o;
  }
};

class IpsetHandle : public nl::SessionHandle<IpsetHandle, Session> {
 public:
  static constexpr nl::HandleKind kKind{"IpsetHandle", kIpsetWhat, kIpsetClosedCode, NETLINK_NETFILTER};

  // new IpsetHandle(netnsFd, timeoutMs, exchange?, receiveBufferBytes?)
  using SessionHandle::SessionHandle;

  static Napi::Function Define(Napi::Env env) {
    return DefineHandle(env, {{"protocol", &IpsetHandle::Protocol}, {"create", &IpsetHandle::Create},
                              {"wholeSetCommand", &IpsetHandle::WholeSetCommand}, {"adt", &IpsetHandle::Adt},
                              {"syncChannel", &IpsetHandle::SyncChannel}, {"test", &IpsetHandle::Test},
                              {"list", &IpsetHandle::List}, {"entries", &IpsetHandle::Entries}});
  }

 private:
  Napi::Value Protocol(const Napi::CallbackInfo& info) {
    return Start(info, std::make_unique<ProtocolBaton>(), "podnet:ipsetProtocol", info[0].ToBoolean());
  }

  // create({ name, type, family, hashsize?, maxelem?, timeout?, cadtFlags, exist }, sync)
  Napi::Value Create(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<CreateBaton>();
    Napi::Object o = info[0].As<Napi::Object>();
    JsReader r(info.Env());
    b->spec.name = r.Str(o, "name");
    b->spec.typeName = r.Str(o, "type");
    b->spec.family = static_cast<uint8_t>(r.U32(o, "family"));
    b->spec.hasHashsize = r.OptU32(o, "hashsize", &b->spec.hashsize);
    b->spec.hasMaxelem = r.OptU32(o, "maxelem", &b->spec.maxelem);
    b->spec.hasTimeout = r.OptU32(o, "timeout", &b->spec.timeout);
    b->spec.cadtFlags = r.U32(o, "cadtFlags");
    b->spec.exist = r.Get(o, "exist").ToBoolean();
    return Start(info, std::move(b), "podnet:ipsetCreate", info[1].ToBoolean());
  }

  // wholeSetCommand(cmd, name, name2, excl, sync): a command on whole sets by name (destroy, flush, rename, swap).
  Napi::Value WholeSetCommand(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<WholeSetCommandBaton>();
    b->cmd = static_cast<uint8_t>(info[0].As<Napi::Number>().Uint32Value());
    b->name = info[1].As<Napi::String>();
    b->name2 = info[2].As<Napi::String>();
    b->excl = info[3].ToBoolean();
    return Start(info, std::move(b), "podnet:ipsetWholeSetCommand", info[4].ToBoolean());
  }

  // adt(cmd, name, records, excl, sync): records must not be written until the promise settles.
  Napi::Value Adt(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<AdtBaton>();
    b->cmd = static_cast<uint8_t>(info[0].As<Napi::Number>().Uint32Value());
    b->name = info[1].As<Napi::String>();
    Napi::Uint8Array records = info[2].As<Napi::Uint8Array>();
    b->records = records.Data();
    b->recordsLen = records.ByteLength();
    b->keep = Napi::Persistent(records);
    b->excl = info[3].ToBoolean();
    return Start(info, std::move(b), "podnet:ipsetAdt", info[4].ToBoolean());
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
    b->name = info[0].As<Napi::String>();
    Napi::Uint8Array bytes = info[1].As<Napi::Uint8Array>();
    ipset::RecordReader reader(bytes.Data(), bytes.ByteLength());
    bool bad = false;
    if (!reader.Next(&b->entry, &bad)) {
      ErrorInfo err = SystemError(EINVAL, "encode");
      err.message = "malformed entry record";
      ThrowError(env, err);
    }
    return Start(info, std::move(b), "podnet:ipsetTest", info[2].ToBoolean());
  }

  // list(name, flags, sync)
  Napi::Value List(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<ListBaton>();
    b->name = info[0].As<Napi::String>();
    b->flags = info[1].As<Napi::Number>().Uint32Value();
    return Start(info, std::move(b), "podnet:ipsetList", info[2].ToBoolean());
  }

  // entries(name | null, maxRecords): name starts the dump, null continues it.
  Napi::Value Entries(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<EntriesBaton>();
    b->start = info[0].IsString();
    if (b->start) b->name = info[0].As<Napi::String>();
    b->max = info[1].As<Napi::Number>().Uint32Value();
    return Start(info, std::move(b), "podnet:ipsetEntries");
  }
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
