// libFuzzer target: ipset replies and dumps, through a Session over datagrams
// from the fuzz input. Input: 33 control bytes, then frames (fuzz_input.h).
//   0     flags: bits 0-1 ops - 1, bit 2 failing sends
//   1-32  four ops of 8 bytes [op, p1..p7]; op % 8:
//         0 Protocol
//         1 TypeRevision of kTypes[p1 % 4], family p2
//         2 Adt: ADD (DEL when p1 & 1, EXCL when p1 & 2) of (p2 | p3 << 8) % 1024
//           records made from p4..p7 (MakeRecord); long comments make a
//           batch span several messages, each answered on its own, so an
//           echoed LINENO can point into any of them. p1 & 4 corrupts the
//           record at p4 instead: the batch must be refused whole.
//         3 Test of MakeRecord(p2, p3..)
//         4 List of "s" (all sets when p1 & 1), list flags p2
//         5 StartEntries("s"), then NextEntries of (p1 | p2 << 8) + 1 records
//           at most p3 % 8 + 1 times
//         6 Create of kTypes[p1 % 4] (TYPE first, then CREATE)
//         7 WholeSetCommand: DESTROY, FLUSH, RENAME or SWAP by p1 % 4
// Every record buffer a dump produced must read back under RecordReader's
// rules: JS reads it with the same ones. scripts/fuzz-seeds.mjs writes seeds
// in this layout.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <memory>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "ipset/constants.h"
#include "ipset/session.h"

using podnet::ErrorInfo;
using podnet::fuzz::Bytes;
using podnet::fuzz::CheckError;
using podnet::fuzz::FuzzTransport;
namespace ipset = podnet::ipset;

namespace {

constexpr size_t kControl = 33;
const char* const kTypes[] = {"hash:ip", "hash:net", "hash:ip,port", "list:set"};

struct Op {
  uint8_t op;
  uint8_t p[7];  // p1..p7
};

// Record i of a batch: every encoder branch (family, each flag, comment
// lengths up to the kernel's 255) is reached by some seed byte.
ipset::Record MakeRecord(uint32_t i, const uint8_t* p) {
  ipset::Record r;
  r.family = (i + p[0]) % 3 == 0 ? 10 : 2;
  r.flags = static_cast<uint8_t>((p[1] ^ (i * 37)) & 0x7f & ~ipset::kHasCounters);
  r.cidr = static_cast<uint8_t>(i % 129);
  r.port = static_cast<uint16_t>(i * 7);
  r.proto = 6;
  r.timeout = i;
  for (int k = 0; k < 16; k++) r.ip[k] = static_cast<uint8_t>(i >> (k % 4 * 8));
  if (r.flags & ipset::kHasComment) r.comment.assign(p[2], static_cast<char>('a' + i % 26));
  return r;
}

void CheckRecords(const ipset::ListResult& out) {
  ipset::RecordReader reader(out.records.data(), out.records.size());
  ipset::Record r;
  bool bad = false;
  uint32_t n = 0;
  while (reader.Next(&r, &bad)) n++;
  FUZZ_CHECK(!bad);
  FUZZ_CHECK(n == out.count);
  FUZZ_CHECK(out.count == 0 || !out.sets.empty());
}

// A failed dump hands on nothing of what it decoded.
void CheckEmpty(const ipset::ListResult& out) {
  FUZZ_CHECK(out.sets.empty());
  FUZZ_CHECK(out.records.empty());
  FUZZ_CHECK(out.count == 0);
}

void RunAdt(ipset::Session& s, const Op& op) {
  uint8_t cmd = (op.p[0] & 1) ? ipset::IPSET_CMD_DEL : ipset::IPSET_CMD_ADD;
  uint32_t n = (op.p[1] | op.p[2] << 8) % 1024;
  std::vector<uint8_t> buf;
  std::vector<size_t> starts;
  for (uint32_t i = 0; i < n; i++) {
    starts.push_back(buf.size());
    ipset::AppendRecord(&buf, MakeRecord(i, op.p + 3));
  }
  bool corrupt = (op.p[0] & 4) != 0 && n > 0;
  if (corrupt) buf[starts[op.p[3] % n]] ^= 0x5a;  // its size field
  uint32_t applied = 0;
  std::vector<ipset::EntryFailure> failures;
  ErrorInfo err = s.Adt(cmd, "s", buf.data(), buf.size(), (op.p[0] & 2) != 0, &applied, &failures);
  CheckError(err);
  if (corrupt) {
    // Checked before anything is sent: nothing applied, no reply read.
    FUZZ_CHECK(err.failed() && err.syscall == "encode");
    FUZZ_CHECK(applied == 0 && failures.empty());
  }
  FUZZ_CHECK(applied + failures.size() <= n);
  for (size_t i = 0; i < failures.size(); i++) {
    FUZZ_CHECK(failures[i].index < n);
    FUZZ_CHECK(i == 0 || failures[i].index > failures[i - 1].index);
    FUZZ_CHECK(failures[i].error > 0 && failures[i].error <= 0xffff);
  }
  if (!err.failed()) FUZZ_CHECK(applied + failures.size() == n);
}

void RunEntries(ipset::Session& s, const Op& op) {
  ErrorInfo err = s.StartEntries("s");
  CheckError(err);
  if (err.failed()) return;
  uint32_t max = (op.p[0] | op.p[1] << 8) + 1u;
  for (int i = 0; i < op.p[2] % 8 + 1; i++) {
    ipset::ListResult out;
    bool done = false;
    err = s.NextEntries(max, &out, &done);
    CheckError(err);
    if (err.failed()) {
      CheckEmpty(out);
      return;
    }
    CheckRecords(out);
    if (done) return;
  }
}

void Run(ipset::Session& s, const Op& op) {
  ErrorInfo err;
  switch (op.op % 8) {
    case 0: {
      uint8_t version = 0;
      err = s.Protocol(&version);
      break;
    }
    case 1: {
      uint8_t max = 0, min = 0;
      err = s.TypeRevision(kTypes[op.p[0] % 4], op.p[1], &max, &min);
      break;
    }
    case 2: RunAdt(s, op); return;
    case 3: {
      bool member = false;
      err = s.Test("s", MakeRecord(op.p[1], op.p + 2), &member);
      break;
    }
    case 4: {
      ipset::ListResult out;
      err = s.List((op.p[0] & 1) ? "" : "s", op.p[1], &out);
      if (err.failed()) CheckEmpty(out);
      else CheckRecords(out);
      break;
    }
    case 5: RunEntries(s, op); return;
    case 6: {
      ipset::CreateSpec spec;
      spec.name = "s";
      spec.typeName = kTypes[op.p[0] % 4];
      spec.hasTimeout = (op.p[1] & 1) != 0;
      spec.timeout = op.p[2];
      spec.cadtFlags = op.p[3];
      spec.exist = (op.p[1] & 2) != 0;
      err = s.Create(spec);
      break;
    }
    default: {
      static const uint8_t kCmds[] = {ipset::IPSET_CMD_DESTROY, ipset::IPSET_CMD_FLUSH, ipset::IPSET_CMD_RENAME,
                                      ipset::IPSET_CMD_SWAP};
      uint8_t cmd = kCmds[op.p[0] % 4];
      bool two = cmd == ipset::IPSET_CMD_RENAME || cmd == ipset::IPSET_CMD_SWAP;
      err = s.WholeSetCommand(cmd, "s", two ? "t" : "", (op.p[1] & 1) != 0);
      break;
    }
  }
  CheckError(err);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  uint8_t flags = in.U8();
  Op ops[4];
  for (Op& op : ops) {
    op.op = in.U8();
    for (uint8_t& b : op.p) b = in.U8();
  }
  if (size < kControl) return 0;

  auto owned = std::make_unique<FuzzTransport>(&in, ipset::IPSET_ATTR_LINENO);
  owned->set_fail_sends((flags & 4) != 0);
  ipset::Session session(std::move(owned), 1000);
  for (int i = 0; i <= (flags & 3); i++) Run(session, ops[i]);
  return 0;
}
