// Entry records: how ipset entries cross the N-API boundary in bulk, in both
// directions, without one N-API call per entry. lib/ipset/record.ts writes and
// reads the same layout. Host byte order; each record is 8-byte aligned:
//
//   0 u16 size        bytes of this record, a multiple of 8
//   2 u8  family      2 (inet) or 10 (inet6)
//   3 u8  flags       kHas* bits below
//   4 u8  cidr
//   5 u8  proto
//   6 u16 port
//   8 u32 timeout     seconds
//  12 u16 commentLen  bytes, no NUL
//  14 u16 reserved
//  16 u8[16] ip       IPv4 in the first 4 bytes
//  32 f64 bytes       counters (dumps only)
//  40 f64 packets
//  48 comment, zero padding to 8
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "netlink/attr.h"

namespace podnet::ipset {

enum RecordFlags : uint8_t {
  kHasCidr = 1,
  kHasPort = 2,
  kHasProto = 4,
  kHasTimeout = 8,
  kHasComment = 16,
  kHasCounters = 32,
  kNomatch = 64,
};

constexpr size_t kRecordHeader = 48;

// The fixed fields of an entry, as a record's header holds them (bytes 2-11).
struct EntryFields {
  uint8_t family = 0;
  uint8_t flags = 0;
  uint8_t cidr = 0;
  uint8_t proto = 0;
  uint16_t port = 0;
  uint32_t timeout = 0;
};

struct Record : EntryFields {
  uint8_t ip[16] = {};
  double bytes = 0;
  double packets = 0;
  std::string comment;
};

// EntryView is what the encoder reads of one entry: a decoded Record's
// fields, or those of a record where it lies in its buffer
// (RecordReader::NextView), so that a batch is encoded without first copying
// every entry and its comment into a Record. Its pointers live as long as
// what they point into.
struct EntryView : EntryFields {
  const uint8_t* ip = nullptr;     // 16 bytes
  const char* comment = nullptr;   // commentLen bytes, not NUL-terminated
  size_t commentLen = 0;
};

EntryView ViewOf(const Record& r);

// A read-only view over a buffer of records, checked as it is walked.
class RecordReader {
 public:
  RecordReader(const uint8_t* data, size_t len) : start_(data), p_(data), end_(data + len) {}
  // False at the end; *bad set when a record is malformed.
  bool Next(Record* out, bool* bad);
  // Like Next, pointing into the buffer instead of copying out of it.
  bool NextView(EntryView* out, bool* bad);
  // Like Next, checking the record without decoding it.
  bool Skip(bool* bad);
  // Offset of the next record from the start of the buffer.
  size_t offset() const { return static_cast<size_t>(p_ - start_); }
  void Seek(size_t offset) { p_ = start_ + offset; }

 private:
  // Size of the record at p_ when it is well-formed, else 0 (*bad set unless at the end).
  size_t CheckNext(bool* bad) const;

  const uint8_t* start_;
  const uint8_t* p_;
  const uint8_t* end_;
};

void AppendRecord(std::vector<uint8_t>* out, const Record& r);

// Writes the entry as one IPSET_ATTR_DATA nest. lineno 0 means none.
void PutEntryData(nl::Writer& w, const EntryView& e, uint32_t lineno);
inline void PutEntryData(nl::Writer& w, const Record& r, uint32_t lineno) { PutEntryData(w, ViewOf(r), lineno); }

// Reads one entry DATA nest of a dump into a record. False when malformed.
bool ParseEntryAttrs(const uint8_t* data, size_t len, uint8_t family, Record* out);

}  // namespace podnet::ipset
