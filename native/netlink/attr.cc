#include "netlink/attr.h"

#include <endian.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <string.h>

namespace podnet::nl {

static_assert(sizeof(nlmsghdr) == 16, "nlmsghdr layout");
static_assert(sizeof(nfgenmsg) == 4, "nfgenmsg layout");

void Writer::Grow(size_t n) {
  size_t want = len_ + n;
  buf_.resize(want > 2 * buf_.size() ? want : 2 * buf_.size());
}

size_t Writer::BeginMessage(uint16_t type, uint16_t flags, uint32_t seq, uint8_t family) {
  size_t offset = len_;
  uint8_t* at = Append(sizeof(nlmsghdr) + sizeof(nfgenmsg));
  nlmsghdr hdr{};
  hdr.nlmsg_type = type;
  hdr.nlmsg_flags = flags;
  hdr.nlmsg_seq = seq;
  memcpy(at, &hdr, sizeof hdr);
  nfgenmsg gen{};
  gen.nfgen_family = family;
  gen.version = NFNETLINK_V0;
  gen.res_id = 0;
  memcpy(at + sizeof hdr, &gen, sizeof gen);
  return offset;
}

size_t Writer::BeginRawMessage(uint16_t type, uint16_t flags, uint32_t seq, const void* fixed, size_t fixedLen) {
  size_t offset = len_;
  size_t padded = Align4(fixedLen);
  uint8_t* at = Append(sizeof(nlmsghdr) + padded);
  nlmsghdr hdr{};
  hdr.nlmsg_type = type;
  hdr.nlmsg_flags = flags;
  hdr.nlmsg_seq = seq;
  memcpy(at, &hdr, sizeof hdr);
  if (fixedLen > 0) memcpy(at + sizeof hdr, fixed, fixedLen);
  memset(at + sizeof hdr + fixedLen, 0, padded - fixedLen);
  return offset;
}

void Writer::EndMessage(size_t offset) {
  uint32_t len = static_cast<uint32_t>(len_ - offset);
  memcpy(buf_.data() + offset, &len, sizeof len);
}

void Writer::Put(uint16_t type, const void* data, size_t len) {
  uint16_t nla_len = static_cast<uint16_t>(kNlaHeader + len);
  size_t total = Align4(kNlaHeader + len);
  uint8_t* at = Append(total);
  memcpy(at, &nla_len, 2);
  memcpy(at + 2, &type, 2);
  if (len > 0) memcpy(at + kNlaHeader, data, len);
  memset(at + kNlaHeader + len, 0, total - kNlaHeader - len);
}

void Writer::PutBe32(uint16_t type, uint32_t v) {
  uint32_t be = htobe32(v);
  Put(type | kNlaNetByteorder, &be, 4);
}

void Writer::PutString(uint16_t type, const std::string& s) { Put(type, s.c_str(), s.size() + 1); }

size_t Writer::BeginNest(uint16_t type) {
  size_t offset = len_;
  Put(type | kNlaNested, nullptr, 0);
  return offset;
}

bool Writer::EndNest(size_t offset) {
  size_t len = len_ - offset;
  if (len > 0xffff) return false;
  uint16_t nla_len = static_cast<uint16_t>(len);
  memcpy(buf_.data() + offset, &nla_len, 2);
  return true;
}

bool AttrIter::Next(Attr* out) {
  if (error_) return false;
  size_t left = static_cast<size_t>(end_ - p_);
  if (left == 0) return false;
  if (left < kNlaHeader) {
    error_ = true;
    return false;
  }
  uint16_t nla_len;
  uint16_t nla_type;
  memcpy(&nla_len, p_, 2);
  memcpy(&nla_type, p_ + 2, 2);
  if (nla_len < kNlaHeader || nla_len > left) {
    error_ = true;
    return false;
  }
  out->type = nla_type & kNlaTypeMask;
  out->data = p_ + kNlaHeader;
  out->len = static_cast<uint16_t>(nla_len - kNlaHeader);
  size_t step = Align4(nla_len);
  p_ = step >= left ? end_ : p_ + step;
  return true;
}

bool ParseAttrs(const uint8_t* data, size_t len, Attr* table, uint16_t maxType) {
  for (uint16_t i = 0; i <= maxType; i++) table[i] = Attr{};
  AttrIter it(data, len);
  Attr a;
  while (it.Next(&a)) {
    if (a.type <= maxType) table[a.type] = a;
  }
  return !it.error();
}

bool GetU8(const Attr& a, uint8_t* v) {
  if (a.len != 1) return false;
  *v = a.data[0];
  return true;
}

bool GetU32(const Attr& a, uint32_t* v) {
  if (a.len != 4) return false;
  memcpy(v, a.data, 4);
  return true;
}

bool GetBe16(const Attr& a, uint16_t* v) {
  if (a.len != 2) return false;
  uint16_t be;
  memcpy(&be, a.data, 2);
  *v = be16toh(be);
  return true;
}

bool GetBe32(const Attr& a, uint32_t* v) {
  if (a.len != 4) return false;
  uint32_t be;
  memcpy(&be, a.data, 4);
  *v = be32toh(be);
  return true;
}

bool GetBe64(const Attr& a, uint64_t* v) {
  if (a.len != 8) return false;
  uint64_t be;
  memcpy(&be, a.data, 8);
  *v = be64toh(be);
  return true;
}

bool GetString(const Attr& a, std::string* v) {
  if (a.len == 0) return false;
  const void* nul = memchr(a.data, 0, a.len);
  if (nul == nullptr) return false;
  v->assign(reinterpret_cast<const char*>(a.data), static_cast<const uint8_t*>(nul) - a.data);
  return true;
}

}  // namespace podnet::nl
