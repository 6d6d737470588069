// The route codec: rtnetlink requests encoded onto a netlink Writer, and
// dump messages decoded into plain objects. Pure functions over bytes (no
// sockets, no N-API), so the fuzz targets and the session share them.
// Every decoder is given the payload after the nlmsghdr and checks every
// length it reads: a short fixed header, a truncated attribute or a known
// attribute of the wrong size is a malformed message, never a silent stop.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>

#include "netlink/attr.h"
#include "netlink/engine.h"
#include "rtnetlink/objects.h"

namespace podnet::rt {

// Decoders: false on malformed input, with *why naming what was wrong.
bool DecodeLink(const uint8_t* payload, size_t len, Link* out, const char** why);
bool DecodeAddress(const uint8_t* payload, size_t len, Address* out, const char** why);
bool DecodeRoute(const uint8_t* payload, size_t len, Route* out, const char** why);
bool DecodeRule(const uint8_t* payload, size_t len, Rule* out, const char** why);

// A dump request of one object kind (RTM_GETLINK, RTM_GETADDR, RTM_GETROUTE,
// RTM_GETRULE) for one family (AF_UNSPEC: all).
void EncodeDump(nl::Writer& w, uint16_t type, uint32_t seq, uint8_t family);
// RTM_GETLINK for one link, by index (> 0) or else by name.
void EncodeGetLink(nl::Writer& w, uint32_t seq, uint32_t index, const std::string& name);
// RTM_NEWROUTE / RTM_DELROUTE with the given netlink flags (NLM_F_REQUEST and
// NLM_F_ACK are always set). Only the fields that are set are sent.
void EncodeRoute(nl::Writer& w, uint16_t type, uint16_t flags, uint32_t seq, const Route& route);
// RTM_NEWRULE / RTM_DELRULE, likewise.
void EncodeRule(nl::Writer& w, uint16_t type, uint16_t flags, uint32_t seq, const Rule& rule);

// The kernel's own text of an extended ACK (NLMSGERR_ATTR_MSG), or "".
std::string ExtAckMessage(const nl::Ack& ack);

}  // namespace podnet::rt
