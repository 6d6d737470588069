#include "rtnetlink/session.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "netlink/session_lock.h"
#include "rtnetlink/codec.h"

namespace podnet::rt {

static ErrorInfo Malformed(const char* what, const char* why) {
  ErrorInfo err = SystemError(EBADMSG, "recv");
  err.message = std::string("malformed rtnetlink reply (") + what + "): " + why;
  return err;
}

static ErrorInfo KernelError(int error, const char* command, const std::string& text) {
  ErrorInfo info;
  info.kind = "rtnetlink";
  info.err = error;
  info.syscall = "sendmsg";
  info.With("command", command);
  if (!text.empty()) info.With("kernelMessage", text);
  return info;
}

ErrorInfo Session::Lock(std::unique_lock<std::mutex>* lock) {
  return nl::LockSession(mu_, engine_.transport(), "ERR_RTNETLINK_REENTERED", "rtnetlink", lock);
}

template <typename T, typename Decode>
ErrorInfo Session::DumpAll(uint16_t type, uint16_t replyType, uint8_t family, const char* what, Decode decode,
                           std::vector<T>* out) {
  auto onMessage = [&](const uint8_t* p, size_t n) -> ErrorInfo {
    if (engine_.message_type() != replyType) return Malformed(what, "a message of another type in the dump");
    T obj;
    const char* why = "";
    if (!decode(p, n, &obj, &why)) return Malformed(what, why);
    out->push_back(std::move(obj));
    return ErrorInfo{};
  };
  int kerr = 0;
  ErrorInfo err = engine_.DumpWhole(
      w_, std::string("rtnetlink dump of ") + what,
      [&](uint32_t seq) { EncodeDump(w_, type, seq, family); }, [&] { out->clear(); }, &kerr, onMessage);
  if (err.failed()) return err;
  if (kerr != 0) return KernelError(kerr, what, "");
  return ErrorInfo{};
}

ErrorInfo Session::Links(std::vector<Link>* out) {
  return DumpAll(RTM_GETLINK, RTM_NEWLINK, AF_UNSPEC, "links", DecodeLink, out);
}

ErrorInfo Session::Addresses(uint8_t family, std::vector<Address>* out) {
  return DumpAll(RTM_GETADDR, RTM_NEWADDR, family, "addresses", DecodeAddress, out);
}

ErrorInfo Session::Routes(uint8_t family, std::vector<Route>* out) {
  return DumpAll(RTM_GETROUTE, RTM_NEWROUTE, family, "routes", DecodeRoute, out);
}

ErrorInfo Session::Rules(uint8_t family, std::vector<Rule>* out) {
  return DumpAll(RTM_GETRULE, RTM_NEWRULE, family, "rules", DecodeRule, out);
}

ErrorInfo Session::GetLink(uint32_t index, const std::string& name, Link* out) {
  w_.Clear();
  uint32_t seq = engine_.ReserveSeq(1);
  EncodeGetLink(w_, seq, index, name);
  int kerr = 0;
  std::string text;
  bool got = false;
  ErrorInfo err = engine_.Exchange(
      w_.data(), w_.size(), seq, 1,
      [&](const nl::Ack& ack) {
        kerr = ack.error;
        if (kerr != 0) text = ExtAckMessage(ack);
      },
      [&](const uint8_t* p, size_t n) -> ErrorInfo {
        if (engine_.message_type() != RTM_NEWLINK) return Malformed("link", "a message of another type");
        const char* why = "";
        if (!DecodeLink(p, n, out, &why)) return Malformed("link", why);
        got = true;
        return ErrorInfo{};
      });
  if (err.failed()) return err;
  if (kerr != 0) return KernelError(kerr, "getLink", text);
  if (!got) return Malformed("link", "acknowledged without the link");
  return ErrorInfo{};
}

static const char* CommandOf(const ChangeRequest& c) {
  if (c.isRule) return c.type == RTM_NEWRULE ? "addRule" : "delRule";
  return c.type == RTM_NEWROUTE ? "addRoute" : "delRoute";
}

ErrorInfo Session::ChangeAll(const std::vector<ChangeRequest>& changes, std::vector<ErrorInfo>* outcomes) {
  outcomes->assign(changes.size(), ErrorInfo{});
  for (size_t start = 0; start < changes.size(); start += kChangesPerExchange) {
    uint32_t count = static_cast<uint32_t>(std::min(kChangesPerExchange, changes.size() - start));
    uint32_t first = engine_.ReserveSeq(count);
    w_.Clear();
    for (uint32_t i = 0; i < count; i++) {
      const ChangeRequest& c = changes[start + i];
      if (c.isRule) EncodeRule(w_, c.type, c.flags, first + i, c.rule);
      else EncodeRoute(w_, c.type, c.flags, first + i, c.route);
    }
    ErrorInfo err = engine_.Exchange(w_.data(), w_.size(), first, count, [&](const nl::Ack& ack) {
      if (ack.error == 0) return;
      size_t at = start + ack.index;
      (*outcomes)[at] = KernelError(ack.error, CommandOf(changes[at]), ExtAckMessage(ack));
    });
    if (err.failed()) {
      outcomes->clear();
      return err;
    }
  }
  return ErrorInfo{};
}

ErrorInfo Session::ChangeOne(ChangeRequest change) {
  std::vector<ChangeRequest> one;
  one.push_back(std::move(change));
  std::vector<ErrorInfo> outcome;
  ErrorInfo err = ChangeAll(one, &outcome);
  return err.failed() ? err : outcome[0];
}

ErrorInfo Session::ChangeRoute(uint16_t type, uint16_t flags, const Route& route) {
  ChangeRequest c;
  c.type = type;
  c.flags = flags;
  c.route = route;
  return ChangeOne(std::move(c));
}

ErrorInfo Session::ChangeRule(uint16_t type, uint16_t flags, const Rule& rule) {
  ChangeRequest c;
  c.isRule = true;
  c.type = type;
  c.flags = flags;
  c.rule = rule;
  return ChangeOne(std::move(c));
}

}  // namespace podnet::rt
