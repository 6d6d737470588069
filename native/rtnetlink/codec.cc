#include "rtnetlink/codec.h"

#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>

namespace podnet::rt {

static_assert(sizeof(ifinfomsg) == 16, "ifinfomsg layout");
static_assert(sizeof(ifaddrmsg) == 8, "ifaddrmsg layout");
static_assert(sizeof(rtmsg) == 12, "rtmsg layout");
static_assert(sizeof(fib_rule_hdr) == 12, "fib_rule_hdr layout");

namespace {

// IFNAMSIZ without its NUL: the kernel's interface names, as podnet takes them back.
constexpr size_t kMaxIfname = 15;

// An interface name attribute: 1 to kMaxIfname bytes, NUL-terminated.
bool GetIfname(const nl::Attr& a, std::string* out) {
  return nl::GetString(a, out) && !out->empty() && out->size() <= kMaxIfname;
}

bool Fail(const char** why, const char* what) {
  *why = what;
  return false;
}

void Keep(std::vector<RawAttr>* unknown, const nl::Attr& a) {
  unknown->push_back(RawAttr{a.type, std::vector<uint8_t>(a.data, a.data + a.len)});
}

// An address attribute must be as long as its family's addresses; families
// podnet does not know (AF_MPLS labels, ...) keep whatever length they have.
bool GetAddr(const nl::Attr& a, uint8_t family, std::vector<uint8_t>* out) {
  if (family == AF_INET && a.len != 4) return false;
  if (family == AF_INET6 && a.len != 16) return false;
  out->assign(a.data, a.data + a.len);
  return true;
}

// Walks the attributes after a fixed header of fixedLen bytes.
template <typename Fn>
bool ForEachAttr(const uint8_t* payload, size_t len, size_t fixedLen, const char** why, Fn&& fn) {
  size_t start = nl::Align4(fixedLen);
  if (len < fixedLen) return Fail(why, "message shorter than its fixed header");
  if (len < start) return true;  // a header without padding and without attributes
  nl::AttrIter it(payload + start, len - start);
  nl::Attr a;
  while (it.Next(&a)) {
    if (!fn(a)) return false;
  }
  if (it.error()) return Fail(why, "truncated attribute");
  return true;
}

}  // namespace

bool DecodeLink(const uint8_t* payload, size_t len, Link* out, const char** why) {
  ifinfomsg h;
  if (len < sizeof h) return Fail(why, "link message shorter than ifinfomsg");
  memcpy(&h, payload, sizeof h);
  out->index = static_cast<uint32_t>(h.ifi_index);
  out->type = h.ifi_type;
  out->flags = h.ifi_flags;
  bool named = false;
  bool ok = ForEachAttr(payload, len, sizeof h, why, [&](const nl::Attr& a) {
    switch (a.type) {
      case IFLA_IFNAME:
        if (!GetIfname(a, &out->name)) return Fail(why, "IFLA_IFNAME not a name of 1 to 15 bytes");
        named = true;
        return true;
      case IFLA_MTU:
        if (!nl::GetU32(a, &out->mtu)) return Fail(why, "IFLA_MTU not 4 bytes");
        out->hasMtu = true;
        return true;
      case IFLA_OPERSTATE:
        if (!nl::GetU8(a, &out->operstate)) return Fail(why, "IFLA_OPERSTATE not 1 byte");
        return true;
      case IFLA_ADDRESS:
        out->address.assign(a.data, a.data + a.len);
        return true;
      case IFLA_MASTER:
        if (!nl::GetU32(a, &out->master)) return Fail(why, "IFLA_MASTER not 4 bytes");
        out->hasMaster = true;
        return true;
      case IFLA_LINKINFO: {
        nl::Attr info[IFLA_INFO_MAX + 1];
        if (!nl::ParseAttrs(a.data, a.len, info, IFLA_INFO_MAX)) return Fail(why, "truncated IFLA_LINKINFO");
        if (info[IFLA_INFO_KIND].present() && !nl::GetString(info[IFLA_INFO_KIND], &out->kind)) {
          return Fail(why, "IFLA_INFO_KIND not a string");
        }
        Keep(&out->unknown, a);  // the kind's own data stays available raw
        return true;
      }
      default:
        Keep(&out->unknown, a);
        return true;
    }
  });
  if (!ok) return false;
  if (!named) return Fail(why, "link without IFLA_IFNAME");
  return true;
}

bool DecodeAddress(const uint8_t* payload, size_t len, Address* out, const char** why) {
  ifaddrmsg h;
  if (len < sizeof h) return Fail(why, "address message shorter than ifaddrmsg");
  memcpy(&h, payload, sizeof h);
  out->family = h.ifa_family;
  out->prefixLength = h.ifa_prefixlen;
  out->scope = h.ifa_scope;
  out->flags = h.ifa_flags;
  out->index = h.ifa_index;
  std::vector<uint8_t> local, address;
  bool ok = ForEachAttr(payload, len, sizeof h, why, [&](const nl::Attr& a) {
    switch (a.type) {
      case IFA_ADDRESS:
        if (!GetAddr(a, out->family, &address)) return Fail(why, "IFA_ADDRESS of the wrong length");
        return true;
      case IFA_LOCAL:
        if (!GetAddr(a, out->family, &local)) return Fail(why, "IFA_LOCAL of the wrong length");
        return true;
      case IFA_LABEL:
        if (!nl::GetString(a, &out->label)) return Fail(why, "IFA_LABEL not a string");
        return true;
      case IFA_FLAGS:
        if (!nl::GetU32(a, &out->flags)) return Fail(why, "IFA_FLAGS not 4 bytes");
        return true;
      default:
        Keep(&out->unknown, a);
        return true;
    }
  });
  if (!ok) return false;
  // IPv4 sends both, IFA_LOCAL being the interface's own address and
  // IFA_ADDRESS the peer's on point-to-point links; IPv6 sends IFA_ADDRESS
  // alone unless there is a peer.
  if (!local.empty()) {
    out->address = local;
    if (!address.empty() && address != local) out->peer = address;
  } else {
    out->address = address;
  }
  if (out->address.empty()) return Fail(why, "address message without an address");
  return true;
}

bool DecodeRoute(const uint8_t* payload, size_t len, Route* out, const char** why) {
  rtmsg h;
  if (len < sizeof h) return Fail(why, "route message shorter than rtmsg");
  memcpy(&h, payload, sizeof h);
  out->family = h.rtm_family;
  out->dstLength = h.rtm_dst_len;
  out->srcLength = h.rtm_src_len;
  out->tos = h.rtm_tos;
  out->table = h.rtm_table;
  out->protocol = h.rtm_protocol;
  out->scope = h.rtm_scope;
  out->type = h.rtm_type;
  out->flags = h.rtm_flags;
  return ForEachAttr(payload, len, sizeof h, why, [&](const nl::Attr& a) {
    switch (a.type) {
      case RTA_DST:
        if (!GetAddr(a, out->family, &out->dst)) return Fail(why, "RTA_DST of the wrong length");
        return true;
      case RTA_SRC:
        if (!GetAddr(a, out->family, &out->src)) return Fail(why, "RTA_SRC of the wrong length");
        return true;
      case RTA_GATEWAY:
        if (!GetAddr(a, out->family, &out->gateway)) return Fail(why, "RTA_GATEWAY of the wrong length");
        return true;
      case RTA_PREFSRC:
        if (!GetAddr(a, out->family, &out->prefsrc)) return Fail(why, "RTA_PREFSRC of the wrong length");
        return true;
      case RTA_OIF:
        if (!nl::GetU32(a, &out->oif)) return Fail(why, "RTA_OIF not 4 bytes");
        out->hasOif = true;
        return true;
      case RTA_PRIORITY:
        if (!nl::GetU32(a, &out->priority)) return Fail(why, "RTA_PRIORITY not 4 bytes");
        out->hasPriority = true;
        return true;
      case RTA_TABLE:
        if (!nl::GetU32(a, &out->table)) return Fail(why, "RTA_TABLE not 4 bytes");
        return true;
      default:
        Keep(&out->unknown, a);
        return true;
    }
  });
}

bool DecodeRule(const uint8_t* payload, size_t len, Rule* out, const char** why) {
  fib_rule_hdr h;
  if (len < sizeof h) return Fail(why, "rule message shorter than fib_rule_hdr");
  memcpy(&h, payload, sizeof h);
  out->family = h.family;
  out->dstLength = h.dst_len;
  out->srcLength = h.src_len;
  out->tos = h.tos;
  out->table = h.table;
  out->action = h.action;
  out->flags = h.flags;
  return ForEachAttr(payload, len, sizeof h, why, [&](const nl::Attr& a) {
    switch (a.type) {
      case FRA_PRIORITY:
        if (!nl::GetU32(a, &out->priority)) return Fail(why, "FRA_PRIORITY not 4 bytes");
        out->hasPriority = true;
        return true;
      case FRA_FWMARK:
        if (!nl::GetU32(a, &out->mark)) return Fail(why, "FRA_FWMARK not 4 bytes");
        out->hasMark = true;
        return true;
      case FRA_FWMASK:
        if (!nl::GetU32(a, &out->mask)) return Fail(why, "FRA_FWMASK not 4 bytes");
        out->hasMask = true;
        return true;
      case FRA_TABLE:
        if (!nl::GetU32(a, &out->table)) return Fail(why, "FRA_TABLE not 4 bytes");
        return true;
      case FRA_GOTO:
        if (!nl::GetU32(a, &out->gotoTarget)) return Fail(why, "FRA_GOTO not 4 bytes");
        out->hasGoto = true;
        return true;
      case FRA_PROTOCOL:
        if (!nl::GetU8(a, &out->protocol)) return Fail(why, "FRA_PROTOCOL not 1 byte");
        return true;
      case FRA_SRC:
        if (!GetAddr(a, out->family, &out->src)) return Fail(why, "FRA_SRC of the wrong length");
        return true;
      case FRA_DST:
        if (!GetAddr(a, out->family, &out->dst)) return Fail(why, "FRA_DST of the wrong length");
        return true;
      case FRA_IIFNAME:
        if (!GetIfname(a, &out->iifname)) return Fail(why, "FRA_IIFNAME not a name of 1 to 15 bytes");
        return true;
      case FRA_OIFNAME:
        if (!GetIfname(a, &out->oifname)) return Fail(why, "FRA_OIFNAME not a name of 1 to 15 bytes");
        return true;
      default:
        Keep(&out->unknown, a);
        return true;
    }
  });
}

void EncodeDump(nl::Writer& w, uint16_t type, uint32_t seq, uint8_t family) {
  uint16_t flags = NLM_F_REQUEST | NLM_F_DUMP;
  // Each kind's fixed header starts with its family byte; the rest is zero.
  size_t fixed = type == RTM_GETLINK ? sizeof(ifinfomsg) : type == RTM_GETADDR ? sizeof(ifaddrmsg) : sizeof(rtmsg);
  uint8_t head[sizeof(ifinfomsg)] = {};
  head[0] = family;
  w.EndMessage(w.BeginRawMessage(type, flags, seq, head, fixed));
}

void EncodeGetLink(nl::Writer& w, uint32_t seq, uint32_t index, const std::string& name) {
  ifinfomsg h{};
  h.ifi_family = AF_UNSPEC;
  h.ifi_index = static_cast<int>(index);
  size_t off = w.BeginRawMessage(RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, seq, &h, sizeof h);
  if (index == 0) w.PutString(IFLA_IFNAME, name);
  // Only the link, not its statistics and VF lists: a smaller answer.
  w.PutU32(IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
  w.EndMessage(off);
}

static void PutAddr(nl::Writer& w, uint16_t type, const std::vector<uint8_t>& a) {
  if (!a.empty()) w.Put(type, a.data(), a.size());
}

void EncodeRoute(nl::Writer& w, uint16_t type, uint16_t flags, uint32_t seq, const Route& r) {
  rtmsg h{};
  h.rtm_family = r.family;
  h.rtm_dst_len = r.dstLength;
  h.rtm_src_len = r.srcLength;
  h.rtm_tos = r.tos;
  // Table ids past 255 only fit RTA_TABLE, which the kernel prefers anyway.
  h.rtm_table = r.table < 256 ? static_cast<uint8_t>(r.table) : static_cast<uint8_t>(RT_TABLE_UNSPEC);
  h.rtm_protocol = r.protocol;
  h.rtm_scope = r.scope;
  h.rtm_type = r.type;
  h.rtm_flags = r.flags;
  size_t off = w.BeginRawMessage(type, flags | NLM_F_REQUEST | NLM_F_ACK, seq, &h, sizeof h);
  if (r.table != 0) w.PutU32(RTA_TABLE, r.table);
  PutAddr(w, RTA_DST, r.dst);
  PutAddr(w, RTA_SRC, r.src);
  PutAddr(w, RTA_PREFSRC, r.prefsrc);
  PutAddr(w, RTA_GATEWAY, r.gateway);
  if (r.hasOif) w.PutU32(RTA_OIF, r.oif);
  if (r.hasPriority) w.PutU32(RTA_PRIORITY, r.priority);
  w.EndMessage(off);
}

void EncodeRule(nl::Writer& w, uint16_t type, uint16_t flags, uint32_t seq, const Rule& r) {
  fib_rule_hdr h{};
  h.family = r.family;
  h.dst_len = r.dstLength;
  h.src_len = r.srcLength;
  h.tos = r.tos;
  h.table = r.table < 256 ? static_cast<uint8_t>(r.table) : static_cast<uint8_t>(RT_TABLE_UNSPEC);
  h.action = r.action;
  h.flags = r.flags;
  size_t off = w.BeginRawMessage(type, flags | NLM_F_REQUEST | NLM_F_ACK, seq, &h, sizeof h);
  if (r.hasPriority) w.PutU32(FRA_PRIORITY, r.priority);
  if (r.hasMark) w.PutU32(FRA_FWMARK, r.mark);
  if (r.hasMask) w.PutU32(FRA_FWMASK, r.mask);
  if (r.table != 0) w.PutU32(FRA_TABLE, r.table);
  if (r.hasGoto) w.PutU32(FRA_GOTO, r.gotoTarget);
  if (r.protocol != 0) w.PutU8(FRA_PROTOCOL, r.protocol);
  PutAddr(w, FRA_SRC, r.src);
  PutAddr(w, FRA_DST, r.dst);
  if (!r.iifname.empty()) w.PutString(FRA_IIFNAME, r.iifname);
  if (!r.oifname.empty()) w.PutString(FRA_OIFNAME, r.oifname);
  w.EndMessage(off);
}

std::string ExtAckMessage(const nl::Ack& ack) {
  if (!(ack.flags & NLM_F_ACK_TLVS) || ack.echo == nullptr || ack.echoLen < sizeof(nlmsghdr)) return "";
  // The echo is the request's header, then its payload unless capped, then the TLVs.
  size_t skip = sizeof(nlmsghdr);
  if (!(ack.flags & NLM_F_CAPPED)) {
    uint32_t echoed;
    memcpy(&echoed, ack.echo, sizeof echoed);
    skip = nl::Align4(echoed);
  }
  if (skip > ack.echoLen) return "";
  nl::Attr tb[NLMSGERR_ATTR_MAX + 1];
  if (!nl::ParseAttrs(ack.echo + skip, ack.echoLen - skip, tb, NLMSGERR_ATTR_MAX)) return "";
  std::string msg;
  if (tb[NLMSGERR_ATTR_MSG].present()) nl::GetString(tb[NLMSGERR_ATTR_MSG], &msg);
  return msg;
}

}  // namespace podnet::rt
