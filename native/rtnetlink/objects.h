// The rtnetlink objects podnet reads and writes, as plain data: what a dump
// message decodes into and what a change request is encoded from. Addresses
// are raw bytes in network order (4 or 16); the binding formats them.
// Attributes podnet does not decode are kept raw, so a newer kernel's
// additions never break a listing.
#pragma once

#include <stdint.h>

#include <string>
#include <vector>

namespace podnet::rt {

struct RawAttr {
  uint16_t type = 0;  // nested / byte-order flags masked off
  std::vector<uint8_t> data;
};

struct Link {
  uint32_t index = 0;
  uint16_t type = 0;  // ARPHRD_*
  uint32_t flags = 0; // IFF_*
  std::string name;
  bool hasMtu = false;
  uint32_t mtu = 0;
  uint8_t operstate = 0;  // IF_OPER_*
  std::vector<uint8_t> address;  // link-layer address
  std::string kind;              // IFLA_LINKINFO / IFLA_INFO_KIND ("veth", ...), empty when none
  bool hasMaster = false;
  uint32_t master = 0;
  std::vector<RawAttr> unknown;
};

struct Address {
  uint8_t family = 0;
  uint8_t prefixLength = 0;
  uint8_t scope = 0;
  uint32_t flags = 0;  // IFA_F_*: IFA_FLAGS when sent, else ifa_flags
  uint32_t index = 0;
  std::vector<uint8_t> address;  // IFA_LOCAL when present (IPv4), else IFA_ADDRESS
  std::vector<uint8_t> peer;     // IFA_ADDRESS when it differs from IFA_LOCAL (point-to-point)
  std::string label;
  std::vector<RawAttr> unknown;
};

struct Route {
  uint8_t family = 0;
  uint8_t dstLength = 0;
  uint8_t srcLength = 0;
  uint8_t tos = 0;
  uint32_t table = 0;  // RTA_TABLE when sent, else rtm_table
  uint8_t protocol = 0;
  uint8_t scope = 0;
  uint8_t type = 0;
  uint32_t flags = 0;
  std::vector<uint8_t> dst, src, gateway, prefsrc;
  bool hasOif = false;
  uint32_t oif = 0;
  bool hasPriority = false;
  uint32_t priority = 0;
  std::vector<RawAttr> unknown;
};

struct Rule {
  uint8_t family = 0;
  uint8_t dstLength = 0;
  uint8_t srcLength = 0;
  uint8_t tos = 0;
  uint8_t action = 0;  // FR_ACT_*
  uint32_t flags = 0;  // FIB_RULE_INVERT, ...
  uint32_t table = 0;  // FRA_TABLE when sent, else the header's table
  bool hasPriority = false;
  uint32_t priority = 0;
  bool hasMark = false;
  uint32_t mark = 0;
  bool hasMask = false;
  uint32_t mask = 0;
  bool hasGoto = false;
  uint32_t gotoTarget = 0;
  uint8_t protocol = 0;
  std::vector<uint8_t> src, dst;
  std::string iifname, oifname;
  std::vector<RawAttr> unknown;
};

}  // namespace podnet::rt
