// JS surface of native/nftables: an NftablesHandle owning one Session (a
// NETLINK_NETFILTER socket in a namespace, or a JS peer). Every operation is
// a baton run on a libuv worker, or inline on the JS thread for JS peers.
// lib/nftables validates every op before it reaches run(); the readers here
// only take what is there.
#include "nftables/nftables_binding.h"

#include <errno.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netlink.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "netlink/js_objects.h"
#include "netlink/js_reader.h"
#include "netlink/session_handle.h"
#include "nftables/codec.h"
#include "nftables/element_records.h"
#include "nftables/session.h"
#include "util/constants_object.h"
#include "util/js_error.h"
#include "util/run_baton.h"

namespace podnet {

using nft::Session;

template <typename Derived>
using NftablesBaton = SessionBaton<Derived, Session>;

using nl::ObjectArray;
using nl::BytesValue;
using nl::UnknownAttrs;

// Handles count up from 1 per table; a double holds them exactly far past
// what a kernel hands out.
static void SetHandle(Napi::Object o, bool has, uint64_t handle) {
  if (has) o.Set("handle", static_cast<double>(handle));
}

static Napi::Object TableObject(Napi::Env env, const nft::Table& t) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("family", t.family);
  o.Set("name", t.name);
  o.Set("flags", t.flags);
  o.Set("use", t.use);
  SetHandle(o, t.hasHandle, t.handle);
  if (!t.comment.empty()) o.Set("comment", t.comment);
  o.Set("unknown", UnknownAttrs(env, t.unknown));
  return o;
}

static Napi::Object ChainObject(Napi::Env env, const nft::Chain& c) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("family", c.family);
  o.Set("table", c.table);
  o.Set("name", c.name);
  SetHandle(o, c.hasHandle, c.handle);
  if (c.hasHook) {
    o.Set("hook", c.hook);
    o.Set("priority", c.priority);
  }
  if (!c.type.empty()) o.Set("type", c.type);
  if (c.hasPolicy) o.Set("policy", c.policy);
  o.Set("flags", c.flags);
  o.Set("use", c.use);
  if (!c.comment.empty()) o.Set("comment", c.comment);
  o.Set("unknown", UnknownAttrs(env, c.unknown));
  return o;
}

static Napi::Object SetObject(Napi::Env env, const nft::Set& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("family", s.family);
  o.Set("table", s.table);
  o.Set("name", s.name);
  o.Set("flags", s.flags);
  o.Set("keyType", s.keyType);
  o.Set("keyLen", s.keyLen);
  if (s.size != 0) o.Set("size", s.size);
  SetHandle(o, s.hasHandle, s.handle);
  if (!s.comment.empty()) o.Set("comment", s.comment);
  if (s.isMap) {
    Napi::Object map = Napi::Object::New(env);
    map.Set("type", s.dataType);
    map.Set("length", s.dataLen);
    o.Set("map", map);
  }
  o.Set("unknown", UnknownAttrs(env, s.unknown));
  return o;
}

// { name, fields: { key: number | Buffer | string } }; a raw one, which
// podnet does not decode, as { name, data } with its NFTA_EXPR_DATA whole.
static Napi::Object ExprObject(Napi::Env env, const nft::Expr& x) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("name", x.name);
  if (x.raw) {
    o.Set("data", BytesValue(env, x.data));
    return o;
  }
  Napi::Object fields = Napi::Object::New(env);
  for (const nft::ExprField& f : x.fields) {
    const char* key = f.spec->key;
    switch (f.spec->kind) {
      case nft::FieldKind::kU32:
      case nft::FieldKind::kU8:
      case nft::FieldKind::kU64:
        fields.Set(key, static_cast<double>(f.num));
        break;
      case nft::FieldKind::kString:
        fields.Set(key, f.str);
        break;
      case nft::FieldKind::kData:
        fields.Set(key, BytesValue(env, f.bytes));
        break;
      case nft::FieldKind::kVerdict:
        fields.Set(key, static_cast<int32_t>(static_cast<uint32_t>(f.num)));
        if (f.hasChain) fields.Set("chain", f.str);
        break;
      case nft::FieldKind::kPad:
        break;
    }
  }
  o.Set("fields", fields);
  return o;
}

static Napi::Object RuleObject(Napi::Env env, const nft::Rule& r) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("family", r.family);
  o.Set("table", r.table);
  o.Set("chain", r.chain);
  SetHandle(o, r.hasHandle, r.handle);
  if (r.hasPosition) o.Set("position", static_cast<double>(r.position));
  if (r.hasComment) o.Set("comment", r.comment);
  o.Set("exprs", ObjectArray<nft::Expr, ExprObject>(env, r.exprs));
  o.Set("unknown", UnknownAttrs(env, r.unknown));
  return o;
}

static Napi::Object ElementObject(Napi::Env env, const nft::Element& e) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("key", BytesValue(env, e.key));
  o.Set("flags", e.flags);
  if (e.hasComment) o.Set("comment", e.comment);
  if (e.hasData) {
    // { value } or { verdict, chain? }
    Napi::Object d = Napi::Object::New(env);
    if (!e.data.verdict) {
      d.Set("value", BytesValue(env, e.data.value));
    } else {
      d.Set("verdict", e.data.code);
      if (!e.data.chain.empty()) d.Set("chain", e.data.chain);
    }
    o.Set("data", d);
  }
  o.Set("unknown", UnknownAttrs(env, e.unknown));
  return o;
}

static Napi::Object RawObject(Napi::Env env, const nft::RawMessage& m) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("type", m.type);
  o.Set("payload", BytesValue(env, m.payload));
  return o;
}

template <typename T, Napi::Object (*Convert)(Napi::Env, const T&)>
static Napi::Value Listing(Napi::Env env, const std::vector<T>& items, const std::vector<nft::RawMessage>& raw) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("objects", ObjectArray<T, Convert>(env, items));
  o.Set("raw", ObjectArray<nft::RawMessage, RawObject>(env, raw));
  return o;
}

// Ops converted from JS once (nftPrepare), shared by every run that sends them.
using PreparedOps = std::shared_ptr<const std::vector<nft::Op>>;

// One batch of ops, applied all or nothing (Session::Run).
struct BatchBaton : NftablesBaton<BatchBaton> {
  PreparedOps ops;
  uint32_t genId = 0;
  void Locked() { error = session->Run(*ops, genId); }
  Napi::Value Result(Napi::Env env) { return env.Undefined(); }
};

struct GenerationBaton : NftablesBaton<GenerationBaton> {
  uint32_t genId = 0;
  void Locked() { error = session->GetGen(&genId); }
  Napi::Value Result(Napi::Env env) { return Napi::Number::New(env, genId); }
};

struct DumpBaton {
  uint8_t family = 0;
  std::string table, set;
  std::vector<nft::RawMessage> raw;
};

struct TablesBaton : NftablesBaton<TablesBaton>, DumpBaton {
  std::vector<nft::Table> items;
  void Locked() { error = session->Tables(family, &items, &raw); }
  Napi::Value Result(Napi::Env env) { return Listing<nft::Table, TableObject>(env, items, raw); }
};

struct ChainsBaton : NftablesBaton<ChainsBaton>, DumpBaton {
  std::vector<nft::Chain> items;
  void Locked() { error = session->Chains(family, table, &items, &raw); }
  Napi::Value Result(Napi::Env env) { return Listing<nft::Chain, ChainObject>(env, items, raw); }
};

struct SetsBaton : NftablesBaton<SetsBaton>, DumpBaton {
  std::vector<nft::Set> items;
  void Locked() { error = session->Sets(family, table, &items, &raw); }
  Napi::Value Result(Napi::Env env) { return Listing<nft::Set, SetObject>(env, items, raw); }
};

struct RulesBaton : NftablesBaton<RulesBaton>, DumpBaton {
  std::vector<nft::Rule> items;
  void Locked() { error = session->Rules(family, table, &items, &raw); }
  Napi::Value Result(Napi::Env env) { return Listing<nft::Rule, RuleObject>(env, items, raw); }
};

struct ElementsBaton : NftablesBaton<ElementsBaton>, DumpBaton {
  std::vector<nft::Element> items;
  void Locked() { error = session->Elements(family, table, set, &items); }
  Napi::Value Result(Napi::Env env) { return ObjectArray<nft::Element, ElementObject>(env, items); }
};

struct ElementsStartBaton : NftablesBaton<ElementsStartBaton>, DumpBaton {
  void Locked() { error = session->StartElements(family, table, set); }
  Napi::Value Result(Napi::Env env) { return env.Undefined(); }
};

// { elements, done }: the next chunk of the dump ElementsStartBaton began.
struct ElementsNextBaton : NftablesBaton<ElementsNextBaton> {
  uint32_t maxElements = 0;
  bool done = false;
  std::vector<nft::Element> items;
  void Locked() { error = session->NextElements(maxElements, &items, &done); }
  Napi::Value Result(Napi::Env env) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("elements", ObjectArray<nft::Element, ElementObject>(env, items));
    o.Set("done", done);
    return o;
  }
};

struct GetSetBaton : NftablesBaton<GetSetBaton>, DumpBaton {
  bool found = false;
  nft::Set item;
  void Locked() { error = session->GetSet(family, table, set, &found, &item); }
  Napi::Value Result(Napi::Env env) { return found ? Napi::Value(SetObject(env, item)) : env.Null(); }
};

struct GetElementBaton : NftablesBaton<GetElementBaton>, DumpBaton {
  std::vector<uint8_t> key;
  bool found = false;
  nft::Element element;
  void Locked() { error = session->GetElement(family, table, set, key, &found, &element); }
  Napi::Value Result(Napi::Env env) { return found ? Napi::Value(ElementObject(env, element)) : env.Null(); }
};

// { name, fields } or, raw, { name, data }: the fields read by the name's schema.
static nft::Expr ExprFrom(JsReader& p, const Napi::Object& o) {
  nft::Expr x;
  x.name = p.Str(o, "name");
  Napi::Value data = p.Get(o, "data");
  if (data.IsTypedArray()) {
    x.raw = true;
    x.data = BytesOf(data);
    return x;
  }
  size_t count = 0;
  const nft::FieldSpec* specs = nft::ExprSchema(x.name, &count);
  Napi::Value fv = p.Get(o, "fields");
  if (specs == nullptr || !fv.IsObject()) return x;
  Napi::Object fields = fv.As<Napi::Object>();
  for (size_t i = 0; i < count; i++) {
    const nft::FieldSpec& spec = specs[i];
    Napi::Value v = p.Get(fields, spec.key);
    if (v.IsUndefined()) continue;
    nft::ExprField f;
    f.spec = &spec;
    switch (spec.kind) {
      case nft::FieldKind::kU32:
      case nft::FieldKind::kU8:
        f.num = U32Of(v);
        break;
      case nft::FieldKind::kU64:
        f.num = v.IsNumber() ? static_cast<uint64_t>(v.As<Napi::Number>().Int64Value()) : 0;
        break;
      case nft::FieldKind::kString:
        f.str = StrOf(v);
        break;
      case nft::FieldKind::kData:
        f.bytes = BytesOf(v);
        break;
      case nft::FieldKind::kVerdict: {
        f.num = v.IsNumber() ? static_cast<uint32_t>(v.As<Napi::Number>().Int32Value()) : 0;
        Napi::Value chain = p.Get(fields, "chain");
        if (chain.IsString()) {
          f.hasChain = true;
          f.str = chain.As<Napi::String>().Utf8Value();
        }
        break;
      }
      case nft::FieldKind::kPad:
        continue;
    }
    x.fields.push_back(std::move(f));
  }
  return x;
}

// { kind, del, flags, family, table, name, comment, hook?, priority, type, policy?, setFlags, keyType, keyLen,
//   size, setId, records (element records, element_records.h), chain, handle?, position?, exprs }
static nft::Op OpFrom(JsReader& p, const Napi::Object& o) {
  nft::Op op;
  op.kind = static_cast<nft::Op::Kind>(p.U32(o, "kind"));
  op.del = p.Get(o, "del").ToBoolean();
  op.flags = static_cast<uint16_t>(p.U32(o, "flags"));
  uint8_t family = static_cast<uint8_t>(p.U32(o, "family"));
  std::string table = p.Str(o, "table");
  std::string name = p.Str(o, "name");
  std::string comment = p.Str(o, "comment");
  switch (op.kind) {
    case nft::Op::kTable:
    case nft::Op::kFlushTable:
      op.table.family = family;
      op.table.name = table;
      op.table.comment = comment;
      break;
    case nft::Op::kChain: {
      nft::Chain& c = op.chain;
      c.family = family;
      c.table = table;
      c.name = name;
      c.comment = comment;
      if (p.Get(o, "hook").IsNumber()) {
        c.hasHook = true;
        c.hook = p.U32(o, "hook");
        c.priority = p.Get(o, "priority").As<Napi::Number>().Int32Value();
        c.type = p.Str(o, "type");
      }
      if (p.Get(o, "policy").IsNumber()) {
        c.hasPolicy = true;
        c.policy = p.U32(o, "policy");
      }
      break;
    }
    case nft::Op::kSet:
    case nft::Op::kElements: {
      nft::Set& s = op.set;
      s.family = family;
      s.table = table;
      s.name = name;
      s.comment = comment;
      s.flags = p.U32(o, "setFlags");
      s.keyType = p.U32(o, "keyType");
      s.keyLen = p.U32(o, "keyLen");
      s.size = p.U32(o, "size");
      s.id = p.U32(o, "setId");
      Napi::Value records = p.Get(o, "records");
      if (records.IsTypedArray()) {
        Napi::Uint8Array a = records.As<Napi::Uint8Array>();
        const char* why = "";
        // lib/nftables writes the records; one that does not parse is a bug there, thrown before anything is sent.
        if (!op.elements.Assign(a.Data(), a.ByteLength(), &why)) {
          throw Napi::TypeError::New(o.Env(), why);
        }
      }
      break;
    }
    case nft::Op::kRule: {
      nft::Rule& r = op.rule;
      r.family = family;
      r.table = table;
      r.chain = p.Str(o, "chain");
      r.comment = comment;
      Napi::Value handle = p.Get(o, "handle");
      if (handle.IsNumber()) {
        r.hasHandle = true;
        r.handle = static_cast<uint64_t>(handle.As<Napi::Number>().Int64Value());
      }
      Napi::Value position = p.Get(o, "position");
      if (position.IsNumber()) {
        r.hasPosition = true;
        r.position = static_cast<uint64_t>(position.As<Napi::Number>().Int64Value());
      }
      Napi::Value exprs = p.Get(o, "exprs");
      if (exprs.IsArray()) {
        Napi::Array a = exprs.As<Napi::Array>();
        r.exprs.reserve(a.Length());
        for (uint32_t i = 0; i < a.Length(); i++) r.exprs.push_back(ExprFrom(p, a.Get(i).As<Napi::Object>()));
      }
      break;
    }
  }
  return op;
}

static PreparedOps OpsFrom(const Napi::Array& a) {
  auto ops = std::make_shared<std::vector<nft::Op>>();
  ops->reserve(a.Length());
  JsReader props(a.Env());
  for (uint32_t i = 0; i < a.Length(); i++) ops->push_back(OpFrom(props, a.Get(i).As<Napi::Object>()));
  return ops;
}

// nftPrepare(ops): the ops converted to native form once, for runs that send the same batch again and again (the
// agent's in-pod tables, identical for every plain pod). Converting is most of what a run costs the JS thread.
static Napi::Value Prepare(const Napi::CallbackInfo& info) {
  return Napi::External<PreparedOps>::New(info.Env(), new PreparedOps(OpsFrom(info[0].As<Napi::Array>())),
                                          [](Napi::Env, PreparedOps* ops) { delete ops; });
}

class NftablesHandle : public nl::SessionHandle<NftablesHandle, Session> {
 public:
  static constexpr nl::HandleKind kKind{"NftablesHandle", "nftables", "ERR_NFTABLES_CLOSED", NETLINK_NETFILTER};

  // new NftablesHandle(netnsFd, timeoutMs, exchange?)
  using SessionHandle::SessionHandle;

  static Napi::Function Define(Napi::Env env) {
    return DefineHandle(env, {{"run", &NftablesHandle::Run}, {"generation", &NftablesHandle::Generation},
                              {"tables", &NftablesHandle::Tables}, {"chains", &NftablesHandle::Chains},
                              {"sets", &NftablesHandle::Sets}, {"rules", &NftablesHandle::Rules},
                              {"elements", &NftablesHandle::Elements}, {"elementsStart", &NftablesHandle::ElementsStart},
                              {"elementsNext", &NftablesHandle::ElementsNext}, {"getSet", &NftablesHandle::GetSet},
                              {"getElement", &NftablesHandle::GetElement}});
  }

  // Only the kernel sizes dump datagrams by what recvmsg offered before (Session::GetGen).
  static SessionPtr NewSession(std::unique_ptr<nl::Transport> transport, int timeoutMs) {
    bool primeDumps = transport && !transport->NeedsJsThread();
    return std::make_shared<Session>(std::move(transport), timeoutMs, primeDumps);
  }

 private:
  // run(ops or a prepared batch, genId?): genId a generation read before, which the batch then carries.
  Napi::Value Run(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<BatchBaton>();
    if (info.Length() > 1 && info[1].IsNumber()) b->genId = info[1].As<Napi::Number>().Uint32Value();
    b->ops = info[0].IsExternal() ? *info[0].As<Napi::External<PreparedOps>>().Data() : OpsFrom(info[0].As<Napi::Array>());
    return Start(info, std::move(b), "podnet:nftablesRun");
  }

  // generation(): the ruleset generation (NFT_MSG_GETGEN).
  Napi::Value Generation(const Napi::CallbackInfo& info) {
    return Start(info, std::make_unique<GenerationBaton>(), "podnet:nftablesGeneration");
  }

  // tables(family) / chains(family, table) / sets(family, table) / rules(family, table) /
  // elements(family, table, set) / getElement(family, table, set, key)
  template <typename B>
  Napi::Value Dump(const Napi::CallbackInfo& info, const char* name) {
    auto b = std::make_unique<B>();
    b->family = static_cast<uint8_t>(info[0].As<Napi::Number>().Uint32Value());
    if (info.Length() > 1 && info[1].IsString()) b->table = info[1].As<Napi::String>();
    if (info.Length() > 2 && info[2].IsString()) b->set = info[2].As<Napi::String>();
    return Start(info, std::move(b), name);
  }

  Napi::Value Tables(const Napi::CallbackInfo& info) { return Dump<TablesBaton>(info, "podnet:nftablesTables"); }
  Napi::Value Chains(const Napi::CallbackInfo& info) { return Dump<ChainsBaton>(info, "podnet:nftablesChains"); }
  Napi::Value Sets(const Napi::CallbackInfo& info) { return Dump<SetsBaton>(info, "podnet:nftablesSets"); }
  Napi::Value Rules(const Napi::CallbackInfo& info) { return Dump<RulesBaton>(info, "podnet:nftablesRules"); }
  Napi::Value Elements(const Napi::CallbackInfo& info) { return Dump<ElementsBaton>(info, "podnet:nftablesElements"); }

  // elementsStart(family, table, set): sends the element dump that elementsNext(maxElements) then reads.
  Napi::Value ElementsStart(const Napi::CallbackInfo& info) {
    return Dump<ElementsStartBaton>(info, "podnet:nftablesElementsStart");
  }

  Napi::Value ElementsNext(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<ElementsNextBaton>();
    b->maxElements = info[0].As<Napi::Number>().Uint32Value();
    return Start(info, std::move(b), "podnet:nftablesElementsNext");
  }

  // getSet(family, table, set): the set, or null when the kernel answers ENOENT.
  Napi::Value GetSet(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<GetSetBaton>();
    b->family = static_cast<uint8_t>(info[0].As<Napi::Number>().Uint32Value());
    b->table = info[1].As<Napi::String>();
    b->set = info[2].As<Napi::String>();
    return Start(info, std::move(b), "podnet:nftablesGetSet");
  }

  Napi::Value GetElement(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<GetElementBaton>();
    b->family = static_cast<uint8_t>(info[0].As<Napi::Number>().Uint32Value());
    b->table = info[1].As<Napi::String>();
    b->set = info[2].As<Napi::String>();
    b->key = BytesOf(info[3]);
    return Start(info, std::move(b), "podnet:nftablesGetElement");
  }
};

// nftExprsSize(exprs): the bytes a rule's expressions take encoded, their NFTA_RULE_EXPRESSIONS attribute whole (past
// 0xffff its 16-bit length cannot say it), or -1 when the codec refuses an expression for another reason (the
// commit then says why). Counts what is encoded instead of a bound per expression.
static Napi::Value ExprsEncodedSize(const Napi::CallbackInfo& info) {
  JsReader p(info.Env());
  Napi::Array a = info[0].As<Napi::Array>();
  std::vector<nft::Expr> exprs;
  exprs.reserve(a.Length());
  for (uint32_t i = 0; i < a.Length(); i++) exprs.push_back(ExprFrom(p, a.Get(i).As<Napi::Object>()));
  nl::Writer w;
  const char* why = nullptr;
  bool ok = nft::EncodeExprs(w, NFTA_RULE_EXPRESSIONS, exprs, &why);
  if (!ok && w.size() <= 0xffff) return Napi::Number::New(info.Env(), -1);
  return Napi::Number::New(info.Env(), static_cast<double>(w.size()));
}

void RegisterNftables(Napi::Env env, Napi::Object exports) {
  exports.Set("NftablesHandle", NftablesHandle::Define(env));
  exports.Set("nftExprsSize", Napi::Function::New(env, ExprsEncodedSize, "nftExprsSize"));
  exports.Set("nftPrepare", Napi::Function::New(env, Prepare, "nftPrepare"));
  exports.Set("nftablesConstants",
              ConstantsObject(env, {{"create", NLM_F_CREATE},
                                    {"excl", NLM_F_EXCL},
                                    {"replace", NLM_F_REPLACE},
                                    {"append", NLM_F_APPEND},
                                    {"ruleExprsMax", static_cast<uint32_t>(nft::kRuleExprsMax)},
                                    {"nameMax", static_cast<uint32_t>(nft::kNameMax)},
                                    {"commentMax", static_cast<uint32_t>(nft::kCommentMax)},
                                    {"typeIpv4Addr", static_cast<uint32_t>(nft::kTypeIpv4Addr)},
                                    {"typeIpv6Addr", static_cast<uint32_t>(nft::kTypeIpv6Addr)},
                                    {"dataVerdict", NFT_DATA_VERDICT},
                                    {"setInterval", NFT_SET_INTERVAL},
                                    {"setElemIntervalEnd", NFT_SET_ELEM_INTERVAL_END},
                                    {"setElemCatchall", NFT_SET_ELEM_CATCHALL},
                                    {"chainBase", NFT_CHAIN_BASE},
                                    {"opTable", nft::Op::kTable},
                                    {"opChain", nft::Op::kChain},
                                    {"opSet", nft::Op::kSet},
                                    {"opElements", nft::Op::kElements},
                                    {"opFlushTable", nft::Op::kFlushTable},
                                    {"opRule", nft::Op::kRule},
                                    {"batchMax", static_cast<uint32_t>(nft::kBatchMax)}}));
}

}  // namespace podnet
