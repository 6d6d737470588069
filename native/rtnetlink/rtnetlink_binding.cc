// JS surface of native/rtnetlink: an RtnetlinkHandle owning one Session (a
// NETLINK_ROUTE socket in a namespace, or a JS peer). Every operation is a
// baton run on a libuv worker, or inline on the JS thread for JS peers.
// Objects cross the boundary as plain JS objects built in Result(), with
// addresses formatted as the kernel's tools print them.
#include "rtnetlink/rtnetlink_binding.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "netlink/js_objects.h"
#include "netlink/js_reader.h"
#include "netlink/session_handle.h"
#include "rtnetlink/session.h"
#include "util/constants_object.h"
#include "util/js_error.h"
#include "util/run_baton.h"

namespace podnet {

using nl::ObjectArray;
using nl::UnknownAttrs;
using rt::Session;

template <typename Derived>
using RtnetlinkBaton = SessionBaton<Derived, Session>;

// Lowercase hex of bytes, sep between them when it is not NUL.
static std::string Hex(const std::vector<uint8_t>& a, char sep) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < a.size(); i++) {
    if (sep != '\0' && i > 0) out += sep;
    out += kHex[a[i] >> 4];
    out += kHex[a[i] & 15];
  }
  return out;
}

// "10.0.0.1", "fd00::1", or hex bytes for families podnet does not format.
static std::string FormatAddr(uint8_t family, const std::vector<uint8_t>& a) {
  char text[INET6_ADDRSTRLEN];
  if (family == AF_INET && a.size() == 4 && inet_ntop(AF_INET, a.data(), text, sizeof text)) return text;
  if (family == AF_INET6 && a.size() == 16 && inet_ntop(AF_INET6, a.data(), text, sizeof text)) return text;
  return Hex(a, '\0');
}

static void SetAddr(Napi::Object o, const char* key, uint8_t family, const std::vector<uint8_t>& a) {
  if (!a.empty()) o.Set(key, FormatAddr(family, a));
}

static Napi::Object LinkObject(Napi::Env env, const rt::Link& l) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("index", l.index);
  o.Set("name", l.name);
  o.Set("type", l.type);
  o.Set("flags", l.flags);
  if (l.hasMtu) o.Set("mtu", l.mtu);
  o.Set("operstate", l.operstate);
  if (!l.address.empty()) o.Set("address", Hex(l.address, ':'));
  if (!l.kind.empty()) o.Set("kind", l.kind);
  if (l.hasMaster) o.Set("master", l.master);
  o.Set("unknown", UnknownAttrs(env, l.unknown));
  return o;
}

static Napi::Object AddressObject(Napi::Env env, const rt::Address& a) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("family", a.family);
  o.Set("address", FormatAddr(a.family, a.address));
  o.Set("prefixLength", a.prefixLength);
  o.Set("index", a.index);
  o.Set("scope", a.scope);
  o.Set("flags", a.flags);
  SetAddr(o, "peer", a.family, a.peer);
  if (!a.label.empty()) o.Set("label", a.label);
  o.Set("unknown", UnknownAttrs(env, a.unknown));
  return o;
}

static Napi::Object RouteObject(Napi::Env env, const rt::Route& r) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("family", r.family);
  SetAddr(o, "dst", r.family, r.dst);
  o.Set("dstLength", r.dstLength);
  SetAddr(o, "src", r.family, r.src);
  o.Set("srcLength", r.srcLength);
  o.Set("tos", r.tos);
  o.Set("table", r.table);
  o.Set("protocol", r.protocol);
  o.Set("scope", r.scope);
  o.Set("type", r.type);
  o.Set("flags", r.flags);
  SetAddr(o, "gateway", r.family, r.gateway);
  SetAddr(o, "prefsrc", r.family, r.prefsrc);
  if (r.hasOif) o.Set("oif", r.oif);
  if (r.hasPriority) o.Set("priority", r.priority);
  o.Set("unknown", UnknownAttrs(env, r.unknown));
  return o;
}

static Napi::Object RuleObject(Napi::Env env, const rt::Rule& r) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("family", r.family);
  SetAddr(o, "src", r.family, r.src);
  o.Set("srcLength", r.srcLength);
  SetAddr(o, "dst", r.family, r.dst);
  o.Set("dstLength", r.dstLength);
  o.Set("tos", r.tos);
  o.Set("action", r.action);
  o.Set("flags", r.flags);
  o.Set("table", r.table);
  if (r.hasPriority) o.Set("priority", r.priority);
  if (r.hasMark) o.Set("mark", r.mark);
  if (r.hasMask) o.Set("mask", r.mask);
  if (r.hasGoto) o.Set("goto", r.gotoTarget);
  o.Set("protocol", r.protocol);
  if (!r.iifname.empty()) o.Set("iifname", r.iifname);
  if (!r.oifname.empty()) o.Set("oifname", r.oifname);
  o.Set("unknown", UnknownAttrs(env, r.unknown));
  return o;
}

struct LinksBaton : RtnetlinkBaton<LinksBaton> {
  std::vector<rt::Link> links;
  void Locked() { error = session->Links(&links); }
  Napi::Value Result(Napi::Env env) { return ObjectArray<rt::Link, LinkObject>(env, links); }
};

struct LinkBaton : RtnetlinkBaton<LinkBaton> {
  uint32_t index = 0;
  std::string name;
  rt::Link link;
  void Locked() { error = session->GetLink(index, name, &link); }
  Napi::Value Result(Napi::Env env) { return LinkObject(env, link); }
};

struct AddressesBaton : RtnetlinkBaton<AddressesBaton> {
  uint8_t family = 0;
  std::vector<rt::Address> addresses;
  void Locked() { error = session->Addresses(family, &addresses); }
  Napi::Value Result(Napi::Env env) { return ObjectArray<rt::Address, AddressObject>(env, addresses); }
};

struct RoutesBaton : RtnetlinkBaton<RoutesBaton> {
  uint8_t family = 0;
  std::vector<rt::Route> routes;
  void Locked() { error = session->Routes(family, &routes); }
  Napi::Value Result(Napi::Env env) { return ObjectArray<rt::Route, RouteObject>(env, routes); }
};

// The routing policy rules (ip rule), not nf_tables rules.
struct RoutingRulesBaton : RtnetlinkBaton<RoutingRulesBaton> {
  uint8_t family = 0;
  std::vector<rt::Rule> rules;
  void Locked() { error = session->Rules(family, &rules); }
  Napi::Value Result(Napi::Env env) { return ObjectArray<rt::Rule, RuleObject>(env, rules); }
};

struct ChangeRouteBaton : RtnetlinkBaton<ChangeRouteBaton> {
  uint16_t type = 0, flags = 0;
  rt::Route route;
  void Locked() { error = session->ChangeRoute(type, flags, route); }
  Napi::Value Result(Napi::Env env) { return env.Undefined(); }
};

struct ChangeRuleBaton : RtnetlinkBaton<ChangeRuleBaton> {
  uint16_t type = 0, flags = 0;
  rt::Rule rule;
  void Locked() { error = session->ChangeRule(type, flags, rule); }
  Napi::Value Result(Napi::Env env) { return env.Undefined(); }
};

// Resolves to one entry per change: undefined when the kernel made it, else
// the error its own call would have rejected with.
struct ChangeAllBaton : RtnetlinkBaton<ChangeAllBaton> {
  std::vector<rt::ChangeRequest> changes;
  std::vector<ErrorInfo> outcomes;
  void Locked() { error = session->ChangeAll(changes, &outcomes); }
  Napi::Value Result(Napi::Env env) {
    Napi::Array out = Napi::Array::New(env, outcomes.size());
    for (size_t i = 0; i < outcomes.size(); i++) {
      out.Set(static_cast<uint32_t>(i), outcomes[i].failed() ? MakeError(env, outcomes[i]) : env.Undefined());
    }
    return out;
  }
};

// The plain objects lib/rtnetlink passes in (validated there).
static rt::Route RouteFrom(JsReader& in, const Napi::Object& o) {
  rt::Route r;
  r.family = static_cast<uint8_t>(in.U32(o, "family"));
  r.dstLength = static_cast<uint8_t>(in.U32(o, "dstLength"));
  r.srcLength = static_cast<uint8_t>(in.U32(o, "srcLength"));
  r.tos = static_cast<uint8_t>(in.U32(o, "tos"));
  r.table = in.U32(o, "table");
  r.protocol = static_cast<uint8_t>(in.U32(o, "protocol"));
  r.scope = static_cast<uint8_t>(in.U32(o, "scope"));
  r.type = static_cast<uint8_t>(in.U32(o, "type"));
  r.flags = in.U32(o, "flags");
  r.dst = in.Bytes(o, "dst");
  r.src = in.Bytes(o, "src");
  r.gateway = in.Bytes(o, "gateway");
  r.prefsrc = in.Bytes(o, "prefsrc");
  r.hasOif = in.OptU32(o, "oif", &r.oif);
  r.hasPriority = in.OptU32(o, "priority", &r.priority);
  return r;
}

static rt::Rule RuleFrom(JsReader& in, const Napi::Object& o) {
  rt::Rule r;
  r.family = static_cast<uint8_t>(in.U32(o, "family"));
  r.dstLength = static_cast<uint8_t>(in.U32(o, "dstLength"));
  r.srcLength = static_cast<uint8_t>(in.U32(o, "srcLength"));
  r.tos = static_cast<uint8_t>(in.U32(o, "tos"));
  r.action = static_cast<uint8_t>(in.U32(o, "action"));
  r.flags = in.U32(o, "flags");
  r.table = in.U32(o, "table");
  r.hasPriority = in.OptU32(o, "priority", &r.priority);
  r.hasMark = in.OptU32(o, "mark", &r.mark);
  r.hasMask = in.OptU32(o, "mask", &r.mask);
  r.hasGoto = in.OptU32(o, "goto", &r.gotoTarget);
  r.protocol = static_cast<uint8_t>(in.U32(o, "protocol"));
  r.src = in.Bytes(o, "src");
  r.dst = in.Bytes(o, "dst");
  r.iifname = in.Str(o, "iifname");
  r.oifname = in.Str(o, "oifname");
  return r;
}

class RtnetlinkHandle : public nl::SessionHandle<RtnetlinkHandle, Session> {
 public:
  static constexpr nl::HandleKind kKind{"RtnetlinkHandle", "rtnetlink", "ERR_RTNETLINK_CLOSED", NETLINK_ROUTE};

  // new RtnetlinkHandle(netnsFd, timeoutMs, exchange?)
  using SessionHandle::SessionHandle;

  static Napi::Function Define(Napi::Env env) {
    return DefineHandle(env, {{"links", &RtnetlinkHandle::Links}, {"link", &RtnetlinkHandle::Link},
                              {"addresses", &RtnetlinkHandle::Addresses}, {"routes", &RtnetlinkHandle::Routes},
                              {"rules", &RtnetlinkHandle::Rules}, {"changeRoute", &RtnetlinkHandle::ChangeRoute},
                              {"changeRule", &RtnetlinkHandle::ChangeRule},
                              {"changeAll", &RtnetlinkHandle::ChangeAll}});
  }

 private:
  Napi::Value Links(const Napi::CallbackInfo& info) {
    return Start(info, std::make_unique<LinksBaton>(), "podnet:rtnetlinkLinks");
  }

  // link(index, name): index > 0 wins.
  Napi::Value Link(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<LinkBaton>();
    b->index = info[0].As<Napi::Number>().Uint32Value();
    b->name = info[1].As<Napi::String>();
    return Start(info, std::move(b), "podnet:rtnetlinkLink");
  }

  template <typename B>
  Napi::Value FamilyDump(const Napi::CallbackInfo& info, const char* name) {
    auto b = std::make_unique<B>();
    b->family = static_cast<uint8_t>(info[0].As<Napi::Number>().Uint32Value());
    return Start(info, std::move(b), name);
  }

  Napi::Value Addresses(const Napi::CallbackInfo& info) {
    return FamilyDump<AddressesBaton>(info, "podnet:rtnetlinkAddresses");
  }
  Napi::Value Routes(const Napi::CallbackInfo& info) { return FamilyDump<RoutesBaton>(info, "podnet:rtnetlinkRoutes"); }
  Napi::Value Rules(const Napi::CallbackInfo& info) {
    return FamilyDump<RoutingRulesBaton>(info, "podnet:rtnetlinkRules");
  }

  // changeRoute(type, flags, route) / changeRule(type, flags, rule)
  template <typename B, typename Read>
  Napi::Value Change(const Napi::CallbackInfo& info, Read read, const char* name) {
    auto b = std::make_unique<B>();
    b->type = static_cast<uint16_t>(info[0].As<Napi::Number>().Uint32Value());
    b->flags = static_cast<uint16_t>(info[1].As<Napi::Number>().Uint32Value());
    JsReader in(info.Env());
    read(*b, in, info[2].As<Napi::Object>());
    return Start(info, std::move(b), name);
  }

  Napi::Value ChangeRoute(const Napi::CallbackInfo& info) {
    return Change<ChangeRouteBaton>(
        info, [](ChangeRouteBaton& b, JsReader& in, const Napi::Object& o) { b.route = RouteFrom(in, o); },
        "podnet:rtnetlinkChangeRoute");
  }

  Napi::Value ChangeRule(const Napi::CallbackInfo& info) {
    return Change<ChangeRuleBaton>(
        info, [](ChangeRuleBaton& b, JsReader& in, const Napi::Object& o) { b.rule = RuleFrom(in, o); },
        "podnet:rtnetlinkChangeRule");
  }

  // changeAll([{ type, flags, rule } or { type, flags, route }, ...])
  Napi::Value ChangeAll(const Napi::CallbackInfo& info) {
    auto b = std::make_unique<ChangeAllBaton>();
    Napi::Array list = info[0].As<Napi::Array>();
    JsReader in(info.Env());
    b->changes.resize(list.Length());
    for (uint32_t i = 0; i < list.Length(); i++) {
      Napi::Object o = list.Get(i).As<Napi::Object>();
      rt::ChangeRequest& c = b->changes[i];
      c.type = static_cast<uint16_t>(in.U32(o, "type"));
      c.flags = static_cast<uint16_t>(in.U32(o, "flags"));
      c.isRule = o.Has("rule");
      if (c.isRule) c.rule = RuleFrom(in, o.Get("rule").As<Napi::Object>());
      else c.route = RouteFrom(in, o.Get("route").As<Napi::Object>());
    }
    return Start(info, std::move(b), "podnet:rtnetlinkChangeAll");
  }
};

void RegisterRtnetlink(Napi::Env env, Napi::Object exports) {
  exports.Set("RtnetlinkHandle", RtnetlinkHandle::Define(env));
  exports.Set("rtnetlinkConstants",
              ConstantsObject(env, {{"newRoute", RTM_NEWROUTE}, {"delRoute", RTM_DELROUTE},
                                    {"newRule", RTM_NEWRULE}, {"delRule", RTM_DELRULE},
                                    {"create", NLM_F_CREATE}, {"excl", NLM_F_EXCL}, {"replace", NLM_F_REPLACE}}));
}

}  // namespace podnet
