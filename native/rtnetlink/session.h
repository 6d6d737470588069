// rtnetlink operations over one netlink engine: dumps of links, addresses,
// routes and rules (taken again when the kernel flags them interrupted),
// one link by index or name, and route and rule changes.
// Plain C++ (no N-API): it runs on libuv workers.
#pragma once

#include <stdint.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "netlink/attr.h"
#include "netlink/engine.h"
#include "rtnetlink/objects.h"

namespace podnet::rt {

// One change of ChangeAll: a route or a rule, with its message type and flags
// as ChangeRoute / ChangeRule take them.
struct ChangeRequest {
  bool isRule = false;
  uint16_t type = 0, flags = 0;
  Route route;
  Rule rule;
};

// kChangesPerExchange is how many changes ChangeAll sends in one sendmsg: the
// kernel queues an ACK per message before the reader takes any, and the
// receive buffer counts each as a whole skb.
constexpr size_t kChangesPerExchange = 64;

class Session {
 public:
  Session(std::unique_ptr<nl::Transport> transport, int timeoutMs) : engine_(std::move(transport), timeoutMs) {}

  // Takes the session for one operation; refuses re-entry from a JS peer
  // with ERR_RTNETLINK_REENTERED (netlink/session_lock.h).
  ErrorInfo Lock(std::unique_lock<std::mutex>* lock);
  nl::Engine& engine() { return engine_; }

  ErrorInfo Links(std::vector<Link>* out);
  // index > 0 looks up by index, else by name; the kernel's ENODEV when missing.
  ErrorInfo GetLink(uint32_t index, const std::string& name, Link* out);
  ErrorInfo Addresses(uint8_t family, std::vector<Address>* out);
  ErrorInfo Routes(uint8_t family, std::vector<Route>* out);
  ErrorInfo Rules(uint8_t family, std::vector<Rule>* out);

  // type RTM_NEWROUTE / RTM_DELROUTE, flags NLM_F_CREATE|NLM_F_EXCL, ... .
  ErrorInfo ChangeRoute(uint16_t type, uint16_t flags, const Route& route);
  ErrorInfo ChangeRule(uint16_t type, uint16_t flags, const Rule& rule);
  // Sends changes in as few exchanges as kChangesPerExchange allows: the
  // kernel takes each message on its own, in order, and answers each, so
  // (*outcomes)[i] is change i's own answer (failed() when refused), as its
  // own call would have had. The returned error is an exchange's: outcomes
  // then hold nothing.
  ErrorInfo ChangeAll(const std::vector<ChangeRequest>& changes, std::vector<ErrorInfo>* outcomes);

 private:
  template <typename T, typename Decode>
  ErrorInfo DumpAll(uint16_t type, uint16_t replyType, uint8_t family, const char* what, Decode decode,
                    std::vector<T>* out);
  // One change on its own: its refusal is the call's error.
  ErrorInfo ChangeOne(ChangeRequest change);

  std::mutex mu_;
  nl::Engine engine_;
  nl::Writer w_;
};

}  // namespace podnet::rt
