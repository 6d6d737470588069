// libFuzzer target: the nf_tables codec and its session on replies from the
// fuzz input. Input: 65 control bytes, then frames (fuzz_input.h).
//   0      flags: bits 0-2 ops - 1 (1..8), bit 3 failing sends, bit 4 the
//          generation: the session primes its first dump with GETGEN (as a
//          socket's does), Run's batch carries NFNL_BATCH_GENID c (none when
//          0), and op 7 is GetGen instead of the decoders
//   1-32   eight session ops of 4 bytes [op, a, b, c]; op % 8:
//          0 Run: a batch of a % 9 ops, the batch descriptors from b % 8 on
//            (wrapping)
//          1 Tables   2 Chains   3 Sets   4 Rules   5 Elements of t/s
//          6 GetElement of t/s, a 16-byte key when a & 1, else 4 bytes; GetSet
//            of t/s instead when a & 8
//          7 the decoders directly on the bytes after the control bytes (with
//            flags bit 4: GetGen, the NEWGEN and its ACK from the frames)
//          Dumps and gets: family kDumpFamilies[(a >> 1) % 4]; table "t" when
//          a & 8 (Chains, Sets, Rules), else all tables.
//   33-64  eight batch descriptors of 4 bytes [k, p1, p2, p3] (MakeOp):
//          k % 8: 0 table   1 chain   2 set   3, 5 elements   4 flush table
//                 6 rule (MakeRule)   7 an op the codec must refuse
//                 (variant p2 % 10)
//          k & 8 delete; (k >> 4) & 3 the flags kFlags; k & 0x40 a set id
//          p1 & 3 family kFamilies; p1 & 4 a base chain / IPv6 set or keys;
//          p1 & 8 nat chain / dormant table / element flags; p1 & 0x10 names
//          of NFT_NAME_MAXLEN - 1 bytes; p1 & 0x20 a policy, p1 & 0x40 drop
//          p2 % 129 comment length (0: none); p3 element count
//          (p3 & 0x7f) * (p3 & 0x80 ? 16 : 1) + 1, chain hook p3 % 5 and
//          priority (int8) p3 * 10, set flags p3
// Rules (k % 8 == 6): add (k & 8 clear; (p3 >> 4) % 8 + 1 expressions from
// Palette() starting at p3 % its size, appended unless p1 & 0x20, at a
// position when p1 & 0x40), delete by handle p3 + 1 (k & 8 and p1 & 0x20) or
// flush the chain (k & 8 without it).
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
#include "nftables/element_records.h"
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
  switch (d.p2 % 10) {
    case 8:  // a rule without expressions
      op.kind = nft::Op::kRule;
      op.rule.table = op.rule.chain = "x";
      op.del = false;
      return op;
    case 9: {  // a jump without a chain
      op.kind = nft::Op::kRule;
      op.rule.table = op.rule.chain = "x";
      nft::Expr x;
      x.name = "immediate";
      nft::ExprField f;
      f.spec = nft::FindField("immediate", "verdict");
      f.num = static_cast<uint32_t>(NFT_JUMP);
      x.fields.push_back(f);
      op.rule.exprs.push_back(x);
      op.del = false;
      return op;
    }
    case 0: op.kind = nft::Op::kTable; op.table.name.clear(); break;
    case 1: op.kind = nft::Op::kFlushTable; op.table.name.assign(nft::kNameMax + 1, 'x'); break;
    case 2: op.kind = nft::Op::kChain; op.chain.name.assign("a\0b", 3); break;
    case 3: op.kind = nft::Op::kSet; op.set.comment.assign(nft::kCommentMax + 1, 'c'); break;
    case 4: op.kind = nft::Op::kElements; break;  // no elements
    case 5:
      op.kind = nft::Op::kElements;
      {
        std::vector<uint8_t> key(NFT_DATA_VALUE_MAXLEN + 1, 1);
        op.elements.Append(key.data(), key.size(), 0, nullptr);
      }
      break;
    case 6: op.kind = nft::Op::kSet; op.set.keyLen = 0; break;  // an add: the key length is checked
    default:
      op.kind = nft::Op::kChain;
      op.chain.hasHook = true;  // a base chain without a type
      break;
  }
  op.del = (d.k & 8) != 0 && d.p2 % 10 != 6;
  return op;
}

nft::ExprField Num(const char* expr, const char* key, uint64_t v) {
  nft::ExprField f;
  f.spec = nft::FindField(expr, key);
  f.num = v;
  return f;
}

nft::ExprField Data(const char* expr, const char* key, std::vector<uint8_t> v) {
  nft::ExprField f;
  f.spec = nft::FindField(expr, key);
  f.bytes = std::move(v);
  return f;
}

nft::Expr E(const char* name, std::vector<nft::ExprField> fields) {
  nft::Expr x;
  x.name = name;
  x.fields = std::move(fields);
  return x;
}

// Expressions the codec must encode, one of each kind and form.
std::vector<nft::Expr> Palette() {
  nft::ExprField jump = Num("immediate", "verdict", static_cast<uint32_t>(NFT_JUMP));
  jump.hasChain = true;
  jump.str = "c";
  nft::ExprField set;
  set.spec = nft::FindField("lookup", "set");
  set.str = "s";
  nft::Expr raw;
  raw.name = "limit";
  raw.raw = true;
  raw.data = {8, 0, 3, 0, 0, 0, 0, 5, 1};  // an unaligned tail: padded when written
  return {
      E("meta", {Num("meta", "key", NFT_META_L4PROTO), Num("meta", "dreg", NFT_REG_1)}),
      E("cmp", {Num("cmp", "sreg", NFT_REG_1), Num("cmp", "op", NFT_CMP_EQ), Data("cmp", "data", {6})}),
      E("payload", {Num("payload", "dreg", NFT_REG_1), Num("payload", "base", NFT_PAYLOAD_NETWORK_HEADER),
                    Num("payload", "offset", 12), Num("payload", "len", 4)}),
      E("bitwise", {Num("bitwise", "sreg", NFT_REG_1), Num("bitwise", "dreg", NFT_REG_1), Num("bitwise", "len", 4),
                    Data("bitwise", "mask", {0xff, 0x0f, 0, 0}), Data("bitwise", "xor", {0, 0, 0, 0})}),
      E("lookup", {Num("lookup", "sreg", NFT_REG_1), set, Num("lookup", "flags", NFT_LOOKUP_F_INV)}),
      E("ct", {Num("ct", "key", NFT_CT_MARK), Num("ct", "dreg", NFT_REG32_00), Num("ct", "direction", 1)}),
      E("counter", {}),
      E("immediate", {Num("immediate", "dreg", NFT_REG_1), Data("immediate", "data", {0x3a, 0x9e})}),
      E("redir", {Num("redir", "regProtoMin", NFT_REG_1), Num("redir", "flags", 2)}),
      E("nat", {Num("nat", "type", NFT_NAT_SNAT), Num("nat", "family", NFPROTO_IPV4), Num("nat", "regAddrMin", NFT_REG_1)}),
      E("masq", {}),
      E("immediate", {Num("immediate", "dreg", NFT_REG_VERDICT), jump}),
      E("counter", {Num("counter", "bytes", 1ull << 40), Num("counter", "packets", 7)}),
      raw,
  };
}

nft::Op MakeRule(const Desc& d, uint8_t family, const std::string& table, const std::string& comment) {
  static const std::vector<nft::Expr> palette = Palette();
  nft::Op op;
  op.kind = nft::Op::kRule;
  op.del = (d.k & 8) != 0;
  nft::Rule& r = op.rule;
  r.family = family;
  r.table = table;
  r.chain = Name("c", d.p1);
  if (op.del) {
    r.hasHandle = (d.p1 & 0x20) != 0;
    r.handle = d.p3 + 1u;
    return op;
  }
  op.flags = NLM_F_CREATE | ((d.p1 & 0x20) ? 0 : NLM_F_APPEND);
  r.hasPosition = (d.p1 & 0x40) != 0;
  r.position = d.p3;
  r.comment = comment;
  size_t n = (d.p3 >> 4) % 8 + 1;
  for (size_t i = 0; i < n; i++) r.exprs.push_back(palette[(d.p3 + i) % palette.size()]);
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
      for (uint32_t i = 0; i < n; i++) {
        std::vector<uint8_t> key = Key(i, wide);
        std::string text(comment.size(), static_cast<char>('a' + i % 26));
        uint8_t flags = (d.p1 & 8) ? nft::kRecordIntervalEnd : 0;
        FUZZ_CHECK(op.elements.Append(key.data(), key.size(), flags, comment.empty() ? nullptr : &text));
      }
      break;
    }
    case 4:
      op.kind = nft::Op::kFlushTable;
      op.table.family = family;
      op.table.name = table;
      break;
    case 6:
      return MakeRule(d, family, table, comment);
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
// A decoded expression is what the binding hands on: a name, fields each
// with its schema and the size that schema says, verdict chains exactly on
// jump and goto; a raw one has no fields.
void Check(const nft::Expr& x) {
  FUZZ_CHECK(!x.name.empty());
  CheckName(x.name);
  Touch(x.data.data(), x.data.size());
  if (x.raw) FUZZ_CHECK(x.fields.empty());
  size_t count = 0;
  FUZZ_CHECK(x.raw || nft::ExprSchema(x.name, &count) != nullptr);
  for (const nft::ExprField& f : x.fields) {
    FUZZ_CHECK(f.spec != nullptr && f.spec == nft::FindField(x.name, f.spec->key));
    switch (f.spec->kind) {
      case nft::FieldKind::kU8: FUZZ_CHECK(f.num <= 0xff); break;
      case nft::FieldKind::kU32: FUZZ_CHECK(f.num <= 0xffffffffu); break;
      case nft::FieldKind::kU64: break;
      case nft::FieldKind::kData: FUZZ_CHECK(!f.bytes.empty() && f.bytes.size() <= NFT_DATA_VALUE_MAXLEN); break;
      case nft::FieldKind::kString: FUZZ_CHECK(!f.str.empty()); CheckName(f.str); break;
      case nft::FieldKind::kVerdict: {
        int32_t code = static_cast<int32_t>(static_cast<uint32_t>(f.num));
        FUZZ_CHECK(f.hasChain == (code == NFT_JUMP || code == NFT_GOTO));
        if (f.hasChain) CheckName(f.str);
        break;
      }
      default: FUZZ_CHECK(false);  // pads are never handed on
    }
    Touch(f.bytes.data(), f.bytes.size());
  }
}

bool SameFields(const nft::Expr& a, const nft::Expr& b) {
  if (a.fields.size() != b.fields.size()) return false;
  for (size_t i = 0; i < a.fields.size(); i++) {
    const nft::ExprField& x = a.fields[i];
    const nft::ExprField& y = b.fields[i];
    if (x.spec != y.spec || x.num != y.num || x.bytes != y.bytes || x.str != y.str || x.hasChain != y.hasChain) return false;
  }
  return true;
}

// Decoded expressions written again decode to the same: fields as they
// were, raw data as it was (padded to 4 bytes).
void CheckExprRoundTrip(const std::vector<nft::Expr>& exprs) {
  if (exprs.size() > nft::kRuleExprsMax) return;
  podnet::nl::Writer w;
  const char* why = nullptr;
  // A field decoded in another order than the schema's is written in the decoded order.
  if (!nft::EncodeExprs(w, NFTA_RULE_EXPRESSIONS, exprs, &why)) {
    FUZZ_CHECK(why != nullptr);
    return;
  }
  std::vector<nft::Expr> again;
  FUZZ_CHECK(nft::DecodeExprs(w.data() + podnet::nl::kNlaHeader, w.size() - podnet::nl::kNlaHeader, &again, &why));
  FUZZ_CHECK(again.size() == exprs.size());
  for (size_t i = 0; i < exprs.size(); i++) {
    FUZZ_CHECK(again[i].name == exprs[i].name);
    if (!exprs[i].raw) {
      FUZZ_CHECK(!again[i].raw && SameFields(again[i], exprs[i]));
      continue;
    }
    const std::vector<uint8_t>& d = exprs[i].data;
    FUZZ_CHECK(again[i].data.size() == podnet::nl::Align4(d.size()));
    FUZZ_CHECK(d.empty() || memcmp(again[i].data.data(), d.data(), d.size()) == 0);
  }
}

void Check(const nft::Rule& r) {
  CheckName(r.table);
  CheckName(r.chain);
  CheckComment(r.comment);
  FUZZ_CHECK(r.hasComment || r.comment.empty());
  for (const nft::Expr& x : r.exprs) Check(x);
  CheckExprRoundTrip(r.exprs);
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
  // A failed dump (interrupted every time, a kernel error code, a malformed
  // or missing reply) hands on nothing of what it decoded.
  if (err.failed()) {
    FUZZ_CHECK(items.empty());
    if (raw != nullptr) FUZZ_CHECK(raw->empty());
    return;
  }
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

void RunBatch(nft::Session& s, const Desc* descs, uint8_t a, uint8_t b, uint32_t genId) {
  std::vector<nft::Op> ops;
  bool invalid = false;
  for (uint32_t i = 0; i < a % 9u; i++) ops.push_back(MakeOp(descs[(b + i) % 8], &invalid));
  ErrorInfo err = s.Run(ops, genId);
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
    // The element the kernel's extended ACK pointed at, which is one of this message's (its first without one).
    if (*count != std::to_string(m.elementCount)) continue;
    for (uint32_t k = 0; k < m.elementCount; k++) {
      if (*element == std::to_string(m.firstElement + k)) named = true;
    }
    if (named) break;
  }
  FUZZ_CHECK(named);
}

// A generation handed on is one a batch can carry and the kernel checks: never 0, which turns the check off.
void RunGetGen(nft::Session& s) {
  uint32_t genId = 0;
  ErrorInfo err = s.GetGen(&genId);
  CheckError(err);
  if (!err.failed()) FUZZ_CHECK(genId != 0);
}

// The generation in a batch marker: present exactly when asked for, in network order, the rest of BEGIN as without it.
void CheckBatchGenId(const Desc* descs, uint32_t genId) {
  std::vector<nft::Op> ops;
  bool invalid = false;
  ops.push_back(MakeOp(descs[0], &invalid));
  if (invalid) return;
  podnet::nl::Writer with, without;
  std::vector<nft::BatchMessage> m1, m2;
  size_t b1 = 0, e1 = 0, b2 = 0, e2 = 0;
  const char* why = nullptr;
  FUZZ_CHECK(nft::EncodeBatch(with, ops, &m1, &b1, &e1, &why, genId));
  FUZZ_CHECK(nft::EncodeBatch(without, ops, &m2, &b2, &e2, &why));
  size_t extra = genId != 0 ? 8 : 0;
  FUZZ_CHECK(with.size() == without.size() + extra);
  nlmsghdr begin;
  memcpy(&begin, with.data() + b1, sizeof begin);
  FUZZ_CHECK(begin.nlmsg_len == sizeof(nlmsghdr) + 4 + extra);
  if (extra != 0) {
    uint32_t be = 0;
    memcpy(&be, with.data() + b1 + sizeof(nlmsghdr) + 4 + 4, sizeof be);
    FUZZ_CHECK(be32toh(be) == genId);
  }
  FUZZ_CHECK(memcmp(with.data() + b1 + begin.nlmsg_len, without.data() + b2 + sizeof(nlmsghdr) + 4, without.size() - b2 - sizeof(nlmsghdr) - 4) == 0);
}

void RunGetSet(nft::Session& s, uint8_t family) {
  bool found = true;
  nft::Set out;
  ErrorInfo err = s.GetSet(family, "t", "s", &found, &out);
  CheckError(err);
  if (err.failed() || !found) return;
  Check(out);
  // What is taken is the set asked for, never another one the reply named.
  FUZZ_CHECK(out.table == "t" && out.name == "s");
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
  std::vector<nft::Expr> exprs;
  if (nft::DecodeExprs(data, len, &exprs, &why)) {
    for (const auto& x : exprs) Check(x);
    CheckExprRoundTrip(exprs);
  } else {
    FUZZ_CHECK(why != nullptr);
  }
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
  // Element records (the binding's input): what is taken is whole, counted, and read back to its last byte;
  // what is not leaves nothing taken.
  nft::ElementRecords records;
  why = nullptr;
  if (records.Assign(data, len, &why)) {
    FUZZ_CHECK(records.byteLength() == len);
    size_t at = 0, count = 0;
    while (at < records.byteLength()) {
      nft::ElementRecord e = records.Next(&at);
      FUZZ_CHECK(e.keyLen > 0 && (e.comment != nullptr || e.commentLen == 0));
      count++;
    }
    FUZZ_CHECK(at == len && count == records.size());
  } else {
    FUZZ_CHECK(why != nullptr && records.empty() && records.byteLength() == 0);
  }
  why = nullptr;
  uint32_t genId = 0;
  if (nft::DecodeGen(data, len, &genId, &why)) FUZZ_CHECK(genId != 0);
  else FUZZ_CHECK(why != nullptr);
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
  bool generation = (flags & 0x10) != 0;
  nft::Session s(std::move(transport), 1, generation);
  int count = (flags & 7) + 1;
  for (int i = 0; i < count; i++) {
    const uint8_t* op = ops[i];
    uint8_t a = op[1];
    uint8_t family = kDumpFamilies[(a >> 1) % 4];
    std::string table = (a & 8) ? "t" : "";
    switch (op[0] % 8) {
      case 0:
        if (generation) CheckBatchGenId(descs, op[3]);
        RunBatch(s, descs, a, op[2], generation ? op[3] : 0);
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
        // The table bit, which a get does not use, picks the set: existing inputs keep their meaning.
        if (a & 8) RunGetSet(s, family);
        else RunGetElement(s, family, (a & 1) != 0);
        break;
      default:
        if (generation) RunGetGen(s);
        else Decoders(framesAt, rest);
        break;
    }
  }
  return 0;
}
