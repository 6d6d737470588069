// Element records: how a batch's set elements are held, from the N-API
// boundary (lib/nftables/element-records.ts writes them, one buffer per op:
// read property by property, a 10k-element add spent more in N-API calls
// than the kernel spent inserting) to the codec, which encodes straight from
// them. Each record, unaligned, host byte order:
//
//   0 u8  keyLen      1..255 (the codec refuses more than NFT_DATA_VALUE_MAXLEN)
//   1 u8  flags       kRecord* bits
//   2 u16 commentLen  bytes, no NUL (0 without a comment)
//   4 key, then the comment
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

namespace podnet::nft {

constexpr uint8_t kRecordHasComment = 1;
constexpr uint8_t kRecordIntervalEnd = 2;  // NFT_SET_ELEM_INTERVAL_END
constexpr size_t kRecordHeader = 4;

struct ElementRecord {
  const uint8_t* key = nullptr;
  size_t keyLen = 0;
  uint8_t flags = 0;
  const char* comment = nullptr;
  size_t commentLen = 0;
};

class ElementRecords {
 public:
  // Takes a copy of records: false with *why, and nothing taken, when one
  // runs past the end, has an empty key, unknown flag bits or a comment
  // length without the comment flag. What the kernel would refuse in a
  // well-formed record (a key too long, a comment with a NUL) is the codec's
  // to refuse.
  bool Assign(const uint8_t* p, size_t n, const char** why);
  // Appends one element (C++ producers: tests, the fuzz target). False, and
  // nothing appended, for a key of 0 or more than 255 bytes or a comment of
  // more than 65535.
  bool Append(const uint8_t* key, size_t keyLen, uint8_t flags, const std::string* comment);

  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  size_t byteLength() const { return bytes_.size(); }
  // The record at byte offset *at (one Assign or Append made); *at moves past it.
  ElementRecord Next(size_t* at) const;

 private:
  std::vector<uint8_t> bytes_;
  size_t count_ = 0;
};

}  // namespace podnet::nft
