// Element records: how set elements cross the N-API boundary in bulk (an
// element add of 10k addresses read property by property cost more than the
// kernel's whole insert). lib/nftables/element-records.ts writes the layout;
// each record, unaligned, host byte order:
//
//   0 u8  keyLen      1..NFT_DATA_VALUE_MAXLEN
//   1 u8  flags       kRecordHasComment
//   2 u16 commentLen  bytes, no NUL (0 without a comment)
//   4 key, then the comment
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <vector>

#include "nftables/objects.h"

namespace podnet::nft {

constexpr uint8_t kRecordHasComment = 1;
constexpr size_t kRecordHeader = 4;

// Appends the records' elements to *out. False with *why, and *out as it
// was, on a record that runs past the end, an empty key, unknown flag bits or
// a comment length without the comment flag. What the kernel would refuse in
// a well-formed record (a key too long, a comment with a NUL) is EncodeBatch's
// to refuse, as for elements from anywhere else.
bool DecodeElementRecords(const uint8_t* p, size_t n, std::vector<Element>* out, const char** why);

}  // namespace podnet::nft
