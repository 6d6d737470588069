#include "ipset/record.h"

#include <endian.h>
#include <string.h>

#include "ipset/constants.h"

namespace podnet::ipset {

static size_t Align8(size_t n) { return (n + 7) & ~static_cast<size_t>(7); }

size_t RecordReader::CheckNext(bool* bad) const {
  *bad = false;
  size_t left = static_cast<size_t>(end_ - p_);
  if (left == 0) return 0;
  uint16_t size, commentLen;
  if (left >= kRecordHeader) {
    memcpy(&size, p_, 2);
    memcpy(&commentLen, p_ + 12, 2);
    // The kernel keeps at most kMaxCommentLen bytes; longer would also overflow an attribute length.
    if (size >= kRecordHeader && size <= left && commentLen <= kMaxCommentLen && size == Align8(kRecordHeader + commentLen)) return size;
  }
  *bad = true;
  return 0;
}

bool RecordReader::Skip(bool* bad) {
  size_t size = CheckNext(bad);
  p_ += size;
  return size != 0;
}

// ReadFields reads the fixed fields of the record at p.
static void ReadFields(const uint8_t* p, EntryFields* f) {
  f->family = p[2];
  f->flags = p[3];
  f->cidr = p[4];
  f->proto = p[5];
  memcpy(&f->port, p + 6, 2);
  memcpy(&f->timeout, p + 8, 4);
}

bool RecordReader::Next(Record* r, bool* bad) {
  const uint8_t* at = p_;
  EntryView v;
  if (!NextView(&v, bad)) return false;
  static_cast<EntryFields&>(*r) = v;
  memcpy(r->ip, v.ip, 16);
  memcpy(&r->bytes, at + 32, 8);
  memcpy(&r->packets, at + 40, 8);
  r->comment.assign(v.comment, v.commentLen);
  return true;
}

bool RecordReader::NextView(EntryView* v, bool* bad) {
  size_t size = CheckNext(bad);
  if (size == 0) return false;
  uint16_t commentLen;
  memcpy(&commentLen, p_ + 12, 2);
  ReadFields(p_, v);
  v->ip = p_ + 16;
  v->comment = reinterpret_cast<const char*>(p_ + kRecordHeader);
  v->commentLen = commentLen;
  p_ += size;
  return true;
}

EntryView ViewOf(const Record& r) {
  EntryView v;
  static_cast<EntryFields&>(v) = r;
  v.ip = r.ip;
  v.comment = r.comment.data();
  v.commentLen = r.comment.size();
  return v;
}

void AppendRecord(std::vector<uint8_t>* out, const Record& r) {
  size_t size = Align8(kRecordHeader + r.comment.size());
  size_t off = out->size();
  out->resize(off + size, 0);
  uint8_t* p = out->data() + off;
  uint16_t size16 = static_cast<uint16_t>(size);
  uint16_t commentLen = static_cast<uint16_t>(r.comment.size());
  memcpy(p, &size16, 2);
  p[2] = r.family;
  p[3] = r.flags;
  p[4] = r.cidr;
  p[5] = r.proto;
  memcpy(p + 6, &r.port, 2);
  memcpy(p + 8, &r.timeout, 4);
  memcpy(p + 12, &commentLen, 2);
  memcpy(p + 16, r.ip, 16);
  memcpy(p + 32, &r.bytes, 8);
  memcpy(p + 40, &r.packets, 8);
  if (commentLen > 0) memcpy(p + kRecordHeader, r.comment.data(), commentLen);
}

// An entry is encoded in one pass into space reserved up front: this runs
// once per entry of 100k-entry batches, where growing the message attribute
// by attribute cost more than the bytes.
static size_t AttrSize(size_t payload) { return nl::Align4(nl::kNlaHeader + payload); }

static uint8_t* PutAttr(uint8_t* p, uint16_t type, const void* data, size_t len) {
  uint16_t nlaLen = static_cast<uint16_t>(nl::kNlaHeader + len);
  memcpy(p, &nlaLen, 2);
  memcpy(p + 2, &type, 2);
  if (len > 0) memcpy(p + nl::kNlaHeader, data, len);
  size_t total = AttrSize(len);
  memset(p + nl::kNlaHeader + len, 0, total - nl::kNlaHeader - len);
  return p + total;
}

static uint8_t* PutBe32At(uint8_t* p, uint16_t type, uint32_t v) {
  uint32_t be = htobe32(v);
  return PutAttr(p, type | nl::kNlaNetByteorder, &be, 4);
}

// A string attribute of n bytes and the NUL the kernel expects after them
// (NLA_NUL_STRING), which the bytes need not carry.
static uint8_t* PutStringAttr(uint8_t* p, uint16_t type, const char* s, size_t n) {
  uint16_t nlaLen = static_cast<uint16_t>(nl::kNlaHeader + n + 1);
  memcpy(p, &nlaLen, 2);
  memcpy(p + 2, &type, 2);
  if (n > 0) memcpy(p + nl::kNlaHeader, s, n);
  size_t total = AttrSize(n + 1);
  memset(p + nl::kNlaHeader + n, 0, total - nl::kNlaHeader - n);
  return p + total;
}

void PutEntryData(nl::Writer& w, const EntryView& e, uint32_t lineno) {
  const size_t ipLen = e.family == 2 ? 4 : 16;
  const bool comment = (e.flags & kHasComment) != 0;
  size_t size = nl::kNlaHeader + nl::kNlaHeader + AttrSize(ipLen);  // DATA { IP { addr } ...
  if (e.flags & kHasCidr) size += AttrSize(1);
  if (e.flags & kHasPort) size += AttrSize(2);
  if (e.flags & kHasProto) size += AttrSize(1);
  if (e.flags & kHasTimeout) size += AttrSize(4);
  if (e.flags & kNomatch) size += AttrSize(4);
  if (comment) size += AttrSize(e.commentLen + 1);
  if (lineno != 0) size += AttrSize(4);

  uint8_t* start = w.Append(size);
  uint8_t* p = PutAttr(start, IPSET_ATTR_DATA | nl::kNlaNested, nullptr, 0);
  uint8_t* ipNest = p;
  p = PutAttr(p, IPSET_ATTR_IP | nl::kNlaNested, nullptr, 0);
  p = PutAttr(p, (e.family == 2 ? IPSET_ATTR_IPADDR_IPV4 : IPSET_ATTR_IPADDR_IPV6) | nl::kNlaNetByteorder, e.ip, ipLen);
  uint16_t ipNestLen = static_cast<uint16_t>(p - ipNest);
  memcpy(ipNest, &ipNestLen, 2);
  if (e.flags & kHasCidr) p = PutAttr(p, IPSET_ATTR_CIDR, &e.cidr, 1);
  if (e.flags & kHasPort) {
    uint16_t be = htobe16(e.port);
    p = PutAttr(p, IPSET_ATTR_PORT | nl::kNlaNetByteorder, &be, 2);
  }
  if (e.flags & kHasProto) p = PutAttr(p, IPSET_ATTR_PROTO, &e.proto, 1);
  if (e.flags & kHasTimeout) p = PutBe32At(p, IPSET_ATTR_TIMEOUT, e.timeout);
  if (e.flags & kNomatch) p = PutBe32At(p, IPSET_ATTR_CADT_FLAGS, IPSET_FLAG_NOMATCH);
  if (comment) p = PutStringAttr(p, IPSET_ATTR_COMMENT, e.comment, e.commentLen);
  if (lineno != 0) p = PutBe32At(p, IPSET_ATTR_CADT_LINENO, lineno);
  uint16_t dataLen = static_cast<uint16_t>(p - start);
  memcpy(start, &dataLen, 2);
}

bool ParseEntryAttrs(const uint8_t* data, size_t len, uint8_t family, Record* r) {
  nl::Attr tb[IPSET_ATTR_DATA_MAX + 1];
  if (!nl::ParseAttrs(data, len, tb, IPSET_ATTR_DATA_MAX)) return false;
  *r = Record{};
  r->family = family;
  if (!tb[IPSET_ATTR_IP].present()) return false;
  nl::Attr ipt[3];
  if (!nl::ParseAttrs(tb[IPSET_ATTR_IP].data, tb[IPSET_ATTR_IP].len, ipt, 2)) return false;
  if (ipt[IPSET_ATTR_IPADDR_IPV4].present()) {
    if (ipt[IPSET_ATTR_IPADDR_IPV4].len != 4) return false;
    r->family = 2;
    memcpy(r->ip, ipt[IPSET_ATTR_IPADDR_IPV4].data, 4);
  } else if (ipt[IPSET_ATTR_IPADDR_IPV6].present()) {
    if (ipt[IPSET_ATTR_IPADDR_IPV6].len != 16) return false;
    r->family = 10;
    memcpy(r->ip, ipt[IPSET_ATTR_IPADDR_IPV6].data, 16);
  } else {
    return false;
  }
  if (tb[IPSET_ATTR_CIDR].present()) {
    // A prefix of 1 to the address's bits, as the kernel keeps them (and podnet takes them back).
    if (!nl::GetU8(tb[IPSET_ATTR_CIDR], &r->cidr) || r->cidr == 0 || r->cidr > (r->family == 2 ? 32 : 128)) return false;
    r->flags |= kHasCidr;
  }
  if (tb[IPSET_ATTR_PORT].present()) {
    if (!nl::GetBe16(tb[IPSET_ATTR_PORT], &r->port)) return false;
    r->flags |= kHasPort;
  }
  if (tb[IPSET_ATTR_PROTO].present()) {
    if (!nl::GetU8(tb[IPSET_ATTR_PROTO], &r->proto)) return false;
    r->flags |= kHasProto;
  }
  if (tb[IPSET_ATTR_TIMEOUT].present()) {
    if (!nl::GetBe32(tb[IPSET_ATTR_TIMEOUT], &r->timeout)) return false;
    r->flags |= kHasTimeout;
  }
  if (tb[IPSET_ATTR_CADT_FLAGS].present()) {
    uint32_t cadt;
    if (!nl::GetBe32(tb[IPSET_ATTR_CADT_FLAGS], &cadt)) return false;
    if (cadt & IPSET_FLAG_NOMATCH) r->flags |= kNomatch;
  }
  if (tb[IPSET_ATTR_BYTES].present() || tb[IPSET_ATTR_PACKETS].present()) {
    uint64_t bytes = 0, packets = 0;
    if (tb[IPSET_ATTR_BYTES].present() && !nl::GetBe64(tb[IPSET_ATTR_BYTES], &bytes)) return false;
    if (tb[IPSET_ATTR_PACKETS].present() && !nl::GetBe64(tb[IPSET_ATTR_PACKETS], &packets)) return false;
    r->bytes = static_cast<double>(bytes);
    r->packets = static_cast<double>(packets);
    r->flags |= kHasCounters;
  }
  if (tb[IPSET_ATTR_COMMENT].present()) {
    // The kernel keeps at most kMaxCommentLen bytes; a longer comment makes a
    // record that RecordReader and JS refuse (and past 65k, a wrapped size).
    if (!nl::GetString(tb[IPSET_ATTR_COMMENT], &r->comment) || r->comment.size() > kMaxCommentLen) return false;
    r->flags |= kHasComment;
  }
  return true;
}

}  // namespace podnet::ipset
