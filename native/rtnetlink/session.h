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

 private:
  template <typename T, typename Decode>
  ErrorInfo DumpAll(uint16_t type, uint16_t replyType, uint8_t family, const char* what, Decode decode,
                    std::vector<T>* out);
  ErrorInfo Change(const char* command);

  std::mutex mu_;
  nl::Engine engine_;
  nl::Writer w_;
};

}  // namespace podnet::rt
