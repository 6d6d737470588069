#include "nftables/element_records.h"

#include <string.h>

namespace podnet::nft {

static uint16_t CommentLength(const uint8_t* record) {
  uint16_t n;
  memcpy(&n, record + 2, sizeof n);
  return n;
}

bool ElementRecords::Assign(const uint8_t* p, size_t n, const char** why) {
  size_t count = 0;
  for (size_t at = 0; at < n;) {
    if (n - at < kRecordHeader) return (*why = "element record header runs past the end"), false;
    uint8_t keyLen = p[at];
    uint8_t flags = p[at + 1];
    uint16_t commentLen = CommentLength(p + at);
    if (keyLen == 0) return (*why = "element record with an empty key"), false;
    if ((flags & ~(kRecordHasComment | kRecordIntervalEnd)) != 0) return (*why = "element record with unknown flags"), false;
    if (commentLen != 0 && (flags & kRecordHasComment) == 0) return (*why = "element record comment without its flag"), false;
    size_t body = static_cast<size_t>(keyLen) + commentLen;
    if (n - at - kRecordHeader < body) return (*why = "element record runs past the end"), false;
    at += kRecordHeader + body;
    count++;
  }
  bytes_.assign(p, p + n);
  count_ = count;
  return true;
}

bool ElementRecords::Append(const uint8_t* key, size_t keyLen, uint8_t flags, const std::string* comment) {
  if (keyLen == 0 || keyLen > 255 || (comment != nullptr && comment->size() > 0xffff)) return false;
  uint16_t commentLen = comment != nullptr ? static_cast<uint16_t>(comment->size()) : 0;
  uint8_t header[kRecordHeader] = {static_cast<uint8_t>(keyLen),
                                   static_cast<uint8_t>((flags & kRecordIntervalEnd) | (comment ? kRecordHasComment : 0))};
  memcpy(header + 2, &commentLen, sizeof commentLen);
  bytes_.insert(bytes_.end(), header, header + kRecordHeader);
  bytes_.insert(bytes_.end(), key, key + keyLen);
  if (comment != nullptr) bytes_.insert(bytes_.end(), comment->begin(), comment->end());
  count_++;
  return true;
}

ElementRecord ElementRecords::Next(size_t* at) const {
  const uint8_t* p = bytes_.data() + *at;
  ElementRecord r;
  r.keyLen = p[0];
  r.flags = p[1];
  r.commentLen = CommentLength(p);
  r.key = p + kRecordHeader;
  if ((r.flags & kRecordHasComment) != 0) r.comment = reinterpret_cast<const char*>(r.key + r.keyLen);
  *at += kRecordHeader + r.keyLen + r.commentLen;
  return r;
}

}  // namespace podnet::nft
