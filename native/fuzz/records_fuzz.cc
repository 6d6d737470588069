// libFuzzer target: the records buffer (record.h) and the entry codec next to
// it. Byte 0 picks the mode, byte 1 a family, the rest is the subject.
//   mode 0: the rest is a records buffer, as JS hands it to Adt: Next and
//           Skip must agree record for record, AppendRecord must write back
//           what Next read, and a record an entry can carry must survive
//           PutEntryData -> ParseEntryAttrs.
//   mode 1: the rest is one entry's DATA payload from a dump: what
//           ParseEntryAttrs accepts must make a record RecordReader accepts
//           (JS reads dumps by the same rules) and survive the same trip.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <vector>

#include "fuzz/fuzz_input.h"
#include "ipset/record.h"

namespace ipset = podnet::ipset;
namespace nl = podnet::nl;

namespace {

bool Same(const ipset::Record& a, const ipset::Record& b) {
  // Counters compare as bits: a buffer can hold any NaN.
  return a.family == b.family && a.flags == b.flags && a.cidr == b.cidr && a.proto == b.proto && a.port == b.port &&
         a.timeout == b.timeout && memcmp(a.ip, b.ip, 16) == 0 && memcmp(&a.bytes, &b.bytes, 8) == 0 &&
         memcmp(&a.packets, &b.packets, 8) == 0 && a.comment == b.comment;
}

// What an entry message carries of a record: no counters (dumps only), no
// unknown flag bits, the fields of its flags, the address bytes of its family.
ipset::Record Carried(ipset::Record r) {
  constexpr uint8_t kEncoded = ipset::kHasCidr | ipset::kHasPort | ipset::kHasProto | ipset::kHasTimeout |
                               ipset::kHasComment | ipset::kNomatch;
  r.flags &= kEncoded;
  if (!(r.flags & ipset::kHasCidr)) r.cidr = 0;
  if (!(r.flags & ipset::kHasPort)) r.port = 0;
  if (!(r.flags & ipset::kHasProto)) r.proto = 0;
  if (!(r.flags & ipset::kHasTimeout)) r.timeout = 0;
  if (!(r.flags & ipset::kHasComment)) r.comment.clear();
  if (r.family == 2) memset(r.ip + 4, 0, 12);
  r.bytes = 0;
  r.packets = 0;
  return r;
}

// JS refuses comments with NUL and only writes inet or inet6 records; others
// are not entries to encode.
// What podnet itself would send: the decoder refuses a prefix of 0 or past the address's bits (EBADMSG), so a
// record with one cannot round-trip.
bool Encodable(const ipset::Record& r) {
  if (r.family != 2 && r.family != 10) return false;
  if ((r.flags & ipset::kHasCidr) && (r.cidr < 1 || r.cidr > (r.family == 2 ? 32 : 128))) return false;
  return r.comment.find('\0') == std::string::npos;
}

void EntryTrip(const ipset::Record& r, uint32_t lineno) {
  if (!Encodable(r)) return;
  nl::Writer w;
  ipset::PutEntryData(w, r, lineno);
  FUZZ_CHECK(w.size() >= nl::kNlaHeader && w.size() <= 0xffff);
  uint16_t nlaLen;
  memcpy(&nlaLen, w.data(), 2);
  FUZZ_CHECK(nlaLen == w.size());
  ipset::Record back;
  FUZZ_CHECK(ipset::ParseEntryAttrs(w.data() + nl::kNlaHeader, w.size() - nl::kNlaHeader, r.family, &back));
  FUZZ_CHECK(Same(back, Carried(r)));
}

void RecordsBuffer(const uint8_t* data, size_t len) {
  ipset::RecordReader next(data, len), skip(data, len);
  std::vector<ipset::Record> records;
  for (;;) {
    ipset::Record r;
    bool badNext = false, badSkip = false;
    bool gotNext = next.Next(&r, &badNext);
    bool gotSkip = skip.Skip(&badSkip);
    FUZZ_CHECK(gotNext == gotSkip && badNext == badSkip && next.offset() == skip.offset());
    if (!gotNext) break;
    records.push_back(std::move(r));
  }
  std::vector<uint8_t> out;
  for (const ipset::Record& r : records) ipset::AppendRecord(&out, r);
  FUZZ_CHECK(out.size() == next.offset());
  ipset::RecordReader again(out.data(), out.size());
  for (size_t i = 0; i < records.size(); i++) {
    ipset::Record r;
    bool bad = false;
    FUZZ_CHECK(again.Next(&r, &bad));
    FUZZ_CHECK(Same(r, records[i]));
    EntryTrip(r, static_cast<uint32_t>(i + 1));
  }
}

void EntryAttrs(uint8_t family, const uint8_t* data, size_t len) {
  ipset::Record r;
  if (!ipset::ParseEntryAttrs(data, len, family, &r)) return;
  FUZZ_CHECK(r.family == 2 || r.family == 10);
  std::vector<uint8_t> out;
  ipset::AppendRecord(&out, r);
  ipset::RecordReader reader(out.data(), out.size());
  ipset::Record back;
  bool bad = false;
  FUZZ_CHECK(reader.Next(&back, &bad));
  FUZZ_CHECK(!bad && reader.offset() == out.size());
  FUZZ_CHECK(Same(back, r));
  EntryTrip(r, 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  if (data[0] % 2 == 0) {
    RecordsBuffer(data + 2, size - 2);
  } else {
    EntryAttrs(data[1], data + 2, size - 2);
  }
  return 0;
}
