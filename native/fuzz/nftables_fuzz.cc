// libFuzzer target: the nf_tables codec and its session on replies from the
// fuzz input. Input: 65 control bytes, then frames (fuzz_input.h).
//   0      flags: bits 0-2 ops - 1 (1..8), bit 3 failing sends
//   1-32   eight session ops of 4 bytes [op, a, b, c]; op % 8:
//          0 Run: a batch of a % 9 ops, the batch descriptors from b % 8 on
//            (wrapping)
//          1 Tables   2 Chains   3 Sets   4 Rules   5 Elements of t/s
//          6 GetElement of t/s, a 16-byte key when a & 1, else 4 bytes
//          7 the decoders directly on the bytes after the control bytes
//          Dumps and gets: family kDumpFamilies[(a >> 1) % 4]; table "t" when
//          a & 8 (Chains, Sets, Rules), else all tables.
//   33-64  eight batch descriptors of 4 bytes [k, p1, p2, p3] (MakeOp):
//          k % 8: 0, 6 table   1 chain   2 set   3, 5 elements   4 flush table
//                 7 an op the codec must refuse (variant p2 % 8)
//          k & 8 delete; (k >> 4) & 3 the flags kFlags; k & 0x40 a set id
//          p1 & 3 family kFamilies; p1 & 4 a base chain / IPv6 set or keys;
//          p1 & 8 nat chain / dormant table / element flags; p1 & 0x10 names
//          of NFT_NAME_MAXLEN - 1 bytes; p1 & 0x20 a policy, p1 & 0x40 drop
//          p2 % 129 comment length (0: none); p3 element count
//          (p3 & 0x7f) * (p3 & 0x80 ? 16 : 1) + 1, chain hook p3 % 5 and
//          priority (int8) p3 * 10, set flags p3
// Every decoded object must be what the binding relies on: names of at most
// NFT_NAME_MAXLEN - 1 bytes without a NUL, comments that fit a user data
// record, element keys of 1..NFT_DATA_VALUE_MAXLEN bytes and an element got
// with the key length asked; a batch error names an op (and elements) of
// that batch exactly as the codec split it; a batch fails to encode exactly
// when it holds an op that cannot be encoded; every failure a bounded code.
// scripts/fuzz-seeds.mjs writes seeds in this layout.
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netlink.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <memory>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "nftables/codec.h"
#include "nftables/session.h"

using podnet::ErrorInfo;
using podnet::fuzz::Bytes;
using podnet::fuzz::CheckError;
using podnet::fuzz::FuzzTransport;
using podnet::fuzz::Touch;
namespace nft = podnet::nft;

namespace {

constexpr size_t kControl = 65;
constexpr uint8_t kFamilies[] = {NFPROTO_INET, NFPROTO_IPV4, NFPROTO_IPV6, NFPROTO_BRIDGE};
constexpr uint8_t kDumpFamilies[] = {NFPROTO_UNSPEC, NFPROTO_INET, NFPROTO_IPV4, NFPROTO_IPV6};
constexpr uint16_t kFlags[] = {0, NLM_F_CREATE, NLM_F_CREATE | NLM_F_EXCL, NLM_F_CREATE | NLM_F_REPLACE};
// A user data record's value is at most 255 bytes, the NUL included.
constexpr size_t kDecodedCommentMax = 254;

struct Desc {
  uint8_t k, p1, p2, p3;
};

std::string Name(const char* base, uint8_t p1) {
  return (p1 & 0x10) ? std::string(nft::kNameMax, base[0]) : std::string(base);
}

uint32_t ElementCount(uint8_t p3) { return (p3 & 0x7fu) * ((p3 & 0x80) ? 16u : 1u) + 1u; }

std::vector<uint8_t> Key(uint32_t i, bool wide) {
  std::vector<uint8_t> key(wide ? 16 : 4, 0);
  key[0] = wide ? 0xfd : 10;
  key[key.size() - 2] = static_cast<uint8_t>(i >> 8);
  key[key.size() - 1] = static_cast<uint8_t>(i);
  return key;
}

// An op the codec must refuse, whatever the rest of the batch.
nft::Op InvalidOp(const Desc& d) {
  nft::Op op;
  op.flags = kFlags[(d.k >> 4) & 3];
  op.table.name = op.chain.table = op.chain.name = op.set.table = op.set.name = "x";
  op.set.keyLen = 4;
  switch (d.p2 % 8) {
    case 0: op.kind = nft::Op::kTable; op.table.name.clear(); break;
    case 1: op.kind = nft::Op::kFlushTable; op.table.name.assign(nft::kNameMax + 1, 'x'); break;
    case 2: op.kind = nft::Op::kChain; op.chain.name.assign("a\0b", 3); break;
    case 3: op.kind = nft::Op::kSet; op.set.comment.assign(nft::kCommentMax + 1, 'c'); break;
    case 4: op.kind = nft::Op::kElements; break;  // no elements
    case 5:
      op.kind = nft::Op::kElements;
      op.elements.resize(1);
      op.elements[0].key.assign(NFT_DATA_VALUE_MAXLEN + 1, 1);
      break;
    case 6: op.kind = nft::Op::kSet; op.set.keyLen = 0; break;  // an add: the key length is checked
    default:
      op.kind = nft::Op::kChain;
      op.chain.hasHook = true;  // a base chain without a type
      break;
  }
  op.del = (d.k & 8) != 0 && d.p2 % 8 != 6;
  return op;
}

nft::Op MakeOp(const Desc& d, bool* invalid) {
  if (d.k % 8 == 7) {
    *invalid = true;
    return InvalidOp(d);
  }
  nft::Op op;
  op.del = (d.k & 8) != 0;
  op.flags = kFlags[(d.k >> 4) & 3];
  uint8_t family = kFamilies[d.p1 & 3];
  bool wide = (d.p1 & 4) != 0;
  std::string comment(d.p2 % (nft::kCommentMax + 1), 'c');
  std::string table = Name("t", d.p1);
  switch (d.k % 8) {
    case 1: {
      op.kind = nft::Op::kChain;
      nft::Chain& c = op.chain;
      c.family = family;
      c.table = table;
      c.name = Name("c", d.p1);
      c.hasHook = wide;
      c.hook = d.p3 % 5;
      c.priority = static_cast<int8_t>(d.p3) * 10;
      c.type = (d.p1 & 8) ? "nat" : "filter";
      c.hasPolicy = (d.p1 & 0x20) != 0;
      c.policy = (d.p1 & 0x40) ? NF_DROP : NF_ACCEPT;
      c.comment = comment;
      break;
    }
    case 2: {
      op.kind = nft::Op::kSet;
      nft::Set& s = op.set;
      s.family = family;
      s.table = table;
      s.name = Name("s", d.p1);
      s.keyType = wide ? nft::kTypeIpv6Addr : nft::kTypeIpv4Addr;
      s.keyLen = wide ? 16 : 4;
      s.flags = d.p3;
      s.id = (d.k & 0x40) ? 1 : 0;
      s.comment = comment;
      break;
    }
    case 3:
    case 5: {
      op.kind = nft::Op::kElements;
      op.set.family = family;
      op.set.table = table;
      op.set.name = Name("s", d.p1);
      op.set.id = (d.k & 0x40) ? 1 : 0;
      uint32_t n = ElementCount(d.p3);
      op.elements.resize(n);
      for (uint32_t i = 0; i < n; i++) {
        nft::Element& e = op.elements[i];
        e.key = Key(i, wide);
        e.flags = (d.p1 & 8) ? NFT_SET_ELEM_INTERVAL_END : 0;
        e.hasComment = !comment.empty();
        if (e.hasComment) e.comment.assign(comment.size(), static_cast<char>('a' + i % 26));
      }
      break;
    }
    case 4:
      op.kind = nft::Op::kFlushTable;
      op.table.family = family;
      op.table.name = table;
      break;
    default:
      op.kind = nft::Op::kTable;
      op.table.family = family;
      op.table.name = table;
      op.table.flags = (d.p1 & 8) ? NFT_TABLE_F_DORMANT : 0;
      op.table.comment = comment;
      break;
  }
  return op;
}

void CheckName(const std::string& s) {
  FUZZ_CHECK(s.size() <= nft::kNameMax);
  FUZZ_CHECK(memchr(s.data(), 0, s.size()) == nullptr);
  Touch(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

void CheckComment(const std::string& s) {
  FUZZ_CHECK(s.size() <= kDecodedCommentMax);
  FUZZ_CHECK(memchr(s.data(), 0, s.size()) == nullptr);
  Touch(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

void CheckUnknown(const std::vector<nft::RawAttr>& attrs) {
  for (const auto& a : attrs) {
    FUZZ_CHECK(a.type <= podnet::nl::kNlaTypeMask);
    Touch(a.data.data(), a.data.size());
  }
}

void Check(const nft::Table& t) {
  CheckName(t.name);
  CheckComment(t.comment);
  CheckUnknown(t.unknown);
}
void Check(const nft::Chain& c) {
  CheckName(c.table);
  CheckName(c.name);
  CheckName(c.type);
  CheckComment(c.comment);
  CheckUnknown(c.unknown);
}
void Check(const nft::Set& s) {
  CheckName(s.table);
  CheckName(s.name);
  CheckComment(s.comment);
  CheckUnknown(s.unknown);
}
void Check(const nft::Rule& r) {
  CheckName(r.table);
  CheckName(r.chain);
  CheckComment(r.comment);
  Touch(r.expressions.data(), r.expressions.size());
  CheckUnknown(r.unknown);
}
void Check(const nft::Element& e) {
  FUZZ_CHECK(e.key.size() <= NFT_DATA_VALUE_MAXLEN);
  Touch(e.key.data(), e.key.size());
  // The binding hands on a comment only with hasComment: one without it is stale.
  FUZZ_CHECK(e.hasComment || e.comment.empty());
  CheckComment(e.comment);
  CheckUnknown(e.unknown);
}

template <typename T>
void CheckDump(const ErrorInfo& err, uint16_t type, const std::vector<T>& items, const std::vector<nft::RawMessage>* raw) {
  CheckError(err);
  // A dump taken again after NLM_F_DUMP_INTR starts from nothing: what an
  // interrupted attempt decoded is never handed on.
  if (err.err == EAGAIN && std::string(err.kind) == "system") {
    FUZZ_CHECK(items.empty());
    if (raw != nullptr) FUZZ_CHECK(raw->empty());
  }
  if (err.failed()) return;
  for (const auto& item : items) Check(item);
  if (raw == nullptr) return;
  for (const auto& m : *raw) {
    FUZZ_CHECK(m.type != type);
    Touch(m.payload.data(), m.payload.size());
  }
}

const std::string* Field(const ErrorInfo& err, const char* key) {
  for (const auto& f : err.fields) {
    if (f.first == key) return &f.second;
  }
  return nullptr;
}

void RunBatch(nft::Session& s, const Desc* descs, uint8_t a, uint8_t b) {
  std::vector<nft::Op> ops;
  bool invalid = false;
  for (uint32_t i = 0; i < a % 9u; i++) ops.push_back(MakeOp(descs[(b + i) % 8], &invalid));
  ErrorInfo err = s.Run(ops);
  CheckError(err);
  // Refused before anything is sent exactly when an op cannot be encoded.
  FUZZ_CHECK((err.code == "ERR_NFTABLES_ENCODE") == invalid);
  if (invalid || std::string(err.kind) != "nftables") {
    FUZZ_CHECK(Field(err, "index") == nullptr);
    return;
  }
  FUZZ_CHECK(err.err > 0);
  const std::string* index = Field(err, "index");
  const std::string* element = Field(err, "element");
  const std::string* count = Field(err, "elementCount");
  if (index == nullptr) {
    // The batch refused whole (or at BEGIN): no op to name.
    FUZZ_CHECK(element == nullptr && count == nullptr);
    return;
  }
  // The error names one message of the batch as the codec split it.
  podnet::nl::Writer w;
  std::vector<nft::BatchMessage> messages;
  size_t begin = 0, end = 0;
  const char* why = nullptr;
  FUZZ_CHECK(nft::EncodeBatch(w, ops, &messages, &begin, &end, &why));
  bool named = false;
  for (const nft::BatchMessage& m : messages) {
    if (*index != std::to_string(m.op)) continue;
    FUZZ_CHECK(m.op < ops.size());
    if (ops[m.op].kind != nft::Op::kElements) {
      FUZZ_CHECK(element == nullptr && count == nullptr);
      named = true;
      break;
    }
    FUZZ_CHECK(element != nullptr && count != nullptr);
    FUZZ_CHECK(m.elementCount > 0 && m.firstElement + m.elementCount <= ops[m.op].elements.size());
    if (*element == std::to_string(m.firstElement) && *count == std::to_string(m.elementCount)) {
      named = true;
      break;
    }
  }
  FUZZ_CHECK(named);
}

void RunGetElement(nft::Session& s, uint8_t family, bool wide) {
  std::vector<uint8_t> key = Key(1, wide);
  bool found = true;
  nft::Element out;
  ErrorInfo err = s.GetElement(family, "t", "s", key, &found, &out);
  CheckError(err);
  if (err.failed()) return;
  if (!found) return;
  Check(out);
  // The kernel answers with the set's own key, which is the length asked or an EINVAL.
  FUZZ_CHECK(out.key.size() == key.size());
}

// The decoders alone, on bytes that reach them without any engine framing.
void Decoders(const uint8_t* data, size_t len) {
  const char* why = nullptr;
  nft::Table t;
  if (nft::DecodeTable(data, len, &t, &why)) Check(t); else FUZZ_CHECK(why != nullptr);
  why = nullptr;
  nft::Chain c;
  if (nft::DecodeChain(data, len, &c, &why)) Check(c); else FUZZ_CHECK(why != nullptr);
  why = nullptr;
  nft::Set s;
  if (nft::DecodeSet(data, len, &s, &why)) Check(s); else FUZZ_CHECK(why != nullptr);
  why = nullptr;
  nft::Rule r;
  if (nft::DecodeRule(data, len, &r, &why)) Check(r); else FUZZ_CHECK(why != nullptr);
  why = nullptr;
  uint8_t family = 0;
  std::string table, set;
  std::vector<nft::Element> elements;
  if (nft::DecodeElements(data, len, &family, &table, &set, &elements, &why)) {
    CheckName(table);
    CheckName(set);
    for (const auto& e : elements) Check(e);
  } else {
    FUZZ_CHECK(why != nullptr);
  }
  for (uint8_t type : {nft::kUdataTableComment, nft::kUdataSetComment}) {
    std::string out = "unchanged";
    if (nft::UdataString(data, len, type, &out)) CheckComment(out);
    else FUZZ_CHECK(out == "unchanged");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  uint8_t flags = in.U8();
  uint8_t ops[8][4];
  for (auto& op : ops) {
    for (uint8_t& byte : op) byte = in.U8();
  }
  Desc descs[8];
  for (Desc& d : descs) d = Desc{in.U8(), in.U8(), in.U8(), in.U8()};
  if (size < kControl) return 0;
  size_t rest = in.left();
  const uint8_t* framesAt = in.here();

  auto transport = std::make_unique<FuzzTransport>(&in, 0);
  transport->set_fail_sends((flags & 8) != 0);
  nft::Session s(std::move(transport), 1);
  int count = (flags & 7) + 1;
  for (int i = 0; i < count; i++) {
    const uint8_t* op = ops[i];
    uint8_t a = op[1];
    uint8_t family = kDumpFamilies[(a >> 1) % 4];
    std::string table = (a & 8) ? "t" : "";
    switch (op[0] % 8) {
      case 0:
        RunBatch(s, descs, a, op[2]);
        break;
      case 1: {
        std::vector<nft::Table> out;
        std::vector<nft::RawMessage> raw;
        ErrorInfo err = s.Tables(family, &out, &raw);
        CheckDump(err, nft::MsgType(NFT_MSG_NEWTABLE), out, &raw);
        break;
      }
      case 2: {
        std::vector<nft::Chain> out;
        std::vector<nft::RawMessage> raw;
        ErrorInfo err = s.Chains(family, table, &out, &raw);
        CheckDump(err, nft::MsgType(NFT_MSG_NEWCHAIN), out, &raw);
        break;
      }
      case 3: {
        std::vector<nft::Set> out;
        std::vector<nft::RawMessage> raw;
        ErrorInfo err = s.Sets(family, table, &out, &raw);
        CheckDump(err, nft::MsgType(NFT_MSG_NEWSET), out, &raw);
        break;
      }
      case 4: {
        std::vector<nft::Rule> out;
        std::vector<nft::RawMessage> raw;
        ErrorInfo err = s.Rules(family, table, &out, &raw);
        CheckDump(err, nft::MsgType(NFT_MSG_NEWRULE), out, &raw);
        break;
      }
      case 5: {
        std::vector<nft::Element> out;
        ErrorInfo err = s.Elements(family, "t", "s", &out);
        CheckDump(err, nft::MsgType(NFT_MSG_NEWSETELEM), out, nullptr);
        break;
      }
      case 6:
        RunGetElement(s, family, (a & 1) != 0);
        break;
      default:
        Decoders(framesAt, rest);
        break;
    }
  }
  return 0;
}
