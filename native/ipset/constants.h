// ipset nfnetlink constants, named as in the kernel's ip_set.h. Defined here
// because the system header is older than the kernels podnet talks to.
#pragma once

#include <stdint.h>

namespace podnet::ipset {

constexpr uint16_t kSubsysIpset = 6;
constexpr uint8_t kProtocol = 7;
constexpr uint8_t kProtocolMin = 6;
constexpr size_t kMaxNameLen = 31;      // IPSET_MAXNAMELEN - 1
constexpr size_t kMaxCommentLen = 255;  // IPSET_MAX_COMMENT_SIZE

enum Cmd : uint8_t {
  IPSET_CMD_PROTOCOL = 1,
  IPSET_CMD_CREATE = 2,
  IPSET_CMD_DESTROY = 3,
  IPSET_CMD_FLUSH = 4,
  IPSET_CMD_RENAME = 5,
  IPSET_CMD_SWAP = 6,
  IPSET_CMD_LIST = 7,
  IPSET_CMD_SAVE = 8,
  IPSET_CMD_ADD = 9,
  IPSET_CMD_DEL = 10,
  IPSET_CMD_TEST = 11,
  IPSET_CMD_HEADER = 12,
  IPSET_CMD_TYPE = 13,
};

// Command level attributes.
enum : uint16_t {
  IPSET_ATTR_PROTOCOL = 1,
  IPSET_ATTR_SETNAME = 2,
  IPSET_ATTR_TYPENAME = 3,
  IPSET_ATTR_SETNAME2 = IPSET_ATTR_TYPENAME,
  IPSET_ATTR_REVISION = 4,
  IPSET_ATTR_FAMILY = 5,
  IPSET_ATTR_FLAGS = 6,
  IPSET_ATTR_DATA = 7,
  IPSET_ATTR_ADT = 8,
  IPSET_ATTR_LINENO = 9,
  IPSET_ATTR_PROTOCOL_MIN = 10,
  IPSET_ATTR_REVISION_MIN = IPSET_ATTR_PROTOCOL_MIN,
  IPSET_ATTR_INDEX = 11,
  IPSET_ATTR_CMD_MAX = 11,
};

// Inside DATA (create, header and entries share 1-16).
enum : uint16_t {
  IPSET_ATTR_IP = 1,
  IPSET_ATTR_IP_TO = 2,
  IPSET_ATTR_CIDR = 3,
  IPSET_ATTR_PORT = 4,
  IPSET_ATTR_PORT_TO = 5,
  IPSET_ATTR_TIMEOUT = 6,
  IPSET_ATTR_PROTO = 7,
  IPSET_ATTR_CADT_FLAGS = 8,
  IPSET_ATTR_CADT_LINENO = 9,
  // Create / header only.
  IPSET_ATTR_INITVAL = 17,
  IPSET_ATTR_HASHSIZE = 18,
  IPSET_ATTR_MAXELEM = 19,
  IPSET_ATTR_NETMASK = 20,
  IPSET_ATTR_BUCKETSIZE = 21,
  IPSET_ATTR_RESIZE = 22,
  IPSET_ATTR_SIZE = 23,
  IPSET_ATTR_ELEMENTS = 24,
  IPSET_ATTR_REFERENCES = 25,
  IPSET_ATTR_MEMSIZE = 26,
  // Entry only (same numbers, other meaning).
  IPSET_ATTR_ETHER = 17,
  IPSET_ATTR_NAME = 18,
  IPSET_ATTR_NAMEREF = 19,
  IPSET_ATTR_IP2 = 20,
  IPSET_ATTR_CIDR2 = 21,
  IPSET_ATTR_IP2_TO = 22,
  IPSET_ATTR_IFACE = 23,
  IPSET_ATTR_BYTES = 24,
  IPSET_ATTR_PACKETS = 25,
  IPSET_ATTR_COMMENT = 26,
  IPSET_ATTR_SKBMARK = 27,
  IPSET_ATTR_SKBPRIO = 28,
  IPSET_ATTR_SKBQUEUE = 29,
  IPSET_ATTR_PAD = 30,
  IPSET_ATTR_DATA_MAX = 30,
};

enum : uint16_t {
  IPSET_ATTR_IPADDR_IPV4 = 1,
  IPSET_ATTR_IPADDR_IPV6 = 2,
};

// IPSET_ATTR_CADT_FLAGS bits.
enum : uint32_t {
  IPSET_FLAG_NOMATCH = 1u << 2,
  IPSET_FLAG_WITH_COUNTERS = 1u << 3,
  IPSET_FLAG_WITH_COMMENT = 1u << 4,
  IPSET_FLAG_WITH_FORCEADD = 1u << 5,
};

// IPSET_ATTR_FLAGS bits of a LIST request (ipset list -n / -t).
enum : uint32_t {
  IPSET_FLAG_LIST_SETNAME = 1u << 1,
  IPSET_FLAG_LIST_HEADER = 1u << 2,
};

// Kernel error codes (positive here; replies carry them negated).
enum : int {
  IPSET_ERR_PRIVATE = 4096,
  IPSET_ERR_PROTOCOL = 4097,
  IPSET_ERR_FIND_TYPE = 4098,
  IPSET_ERR_EXIST = 4103,
};

}  // namespace podnet::ipset
