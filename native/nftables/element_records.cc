#include "nftables/element_records.h"

#include <string.h>

namespace podnet::nft {

bool DecodeElementRecords(const uint8_t* p, size_t n, std::vector<Element>* out, const char** why) {
  const size_t before = out->size();
  auto fail = [&](const char* reason) {
    out->resize(before);
    *why = reason;
    return false;
  };
  // Counted first: a 10k-element op grown one element at a time moved every element a dozen times.
  size_t count = 0;
  for (size_t at = 0; n - at >= kRecordHeader;) {
    uint16_t commentLen;
    memcpy(&commentLen, p + at + 2, sizeof commentLen);
    size_t next = at + kRecordHeader + p[at] + commentLen;
    if (next > n) break;
    at = next;
    count++;
  }
  out->reserve(before + count);
  size_t at = 0;
  while (at < n) {
    if (n - at < kRecordHeader) return fail("element record header runs past the end");
    uint8_t keyLen = p[at];
    uint8_t flags = p[at + 1];
    uint16_t commentLen;
    memcpy(&commentLen, p + at + 2, sizeof commentLen);
    if (keyLen == 0) return fail("element record with an empty key");
    if ((flags & ~kRecordHasComment) != 0) return fail("element record with unknown flags");
    if (commentLen != 0 && (flags & kRecordHasComment) == 0) return fail("element record comment without its flag");
    size_t body = static_cast<size_t>(keyLen) + commentLen;
    if (n - at - kRecordHeader < body) return fail("element record runs past the end");
    const uint8_t* key = p + at + kRecordHeader;
    Element& e = out->emplace_back();
    e.key.assign(key, key + keyLen);
    if ((flags & kRecordHasComment) != 0) {
      e.hasComment = true;
      e.comment.assign(reinterpret_cast<const char*>(key + keyLen), commentLen);
    }
    at += kRecordHeader + body;
  }
  return true;
}

}  // namespace podnet::nft
