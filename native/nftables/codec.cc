#include "nftables/codec.h"

#include <endian.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <string.h>

namespace podnet::nft {

static_assert(sizeof(nfgenmsg) == 4, "nfgenmsg layout");

namespace {

bool Fail(const char** why, const char* what) {
  *why = what;
  return false;
}

void Keep(std::vector<RawAttr>* unknown, const nl::Attr& a) {
  unknown->push_back(RawAttr{a.type, std::vector<uint8_t>(a.data, a.data + a.len)});
}

// Big-endian values without NLA_F_NET_BYTEORDER, as nft sends them: the
// kernel ignores the flag, and the goldens compare bytes.
void PutNet32(nl::Writer& w, uint16_t type, uint32_t v) { w.PutU32(type, htobe32(v)); }

void PutNet64(nl::Writer& w, uint16_t type, uint64_t v) {
  uint64_t be = htobe64(v);
  w.Put(type, &be, sizeof be);
}

// One libnftnl user data record: type, length (value bytes), value.
void PutUdataRecord(std::vector<uint8_t>* out, uint8_t type, const void* value, size_t len) {
  out->push_back(type);
  out->push_back(static_cast<uint8_t>(len));
  const uint8_t* p = static_cast<const uint8_t*>(value);
  out->insert(out->end(), p, p + len);
}

void PutUdataComment(std::vector<uint8_t>* out, uint8_t type, const std::string& comment) {
  PutUdataRecord(out, type, comment.c_str(), comment.size() + 1);
}

void PutComment(nl::Writer& w, uint16_t attr, uint8_t type, const std::string& comment) {
  if (comment.empty()) return;
  std::vector<uint8_t> udata;
  PutUdataComment(&udata, type, comment);
  w.Put(attr, udata.data(), udata.size());
}

// The message's nfgenmsg, then its attributes.
template <typename Fn>
bool ForEachAttr(const uint8_t* payload, size_t len, uint8_t* family, const char** why, Fn&& fn) {
  if (len < sizeof(nfgenmsg)) return Fail(why, "message shorter than nfgenmsg");
  nfgenmsg gen;
  memcpy(&gen, payload, sizeof gen);
  *family = gen.nfgen_family;
  nl::AttrIter it(payload + sizeof gen, len - sizeof gen);
  nl::Attr a;
  while (it.Next(&a)) {
    if (!fn(a)) return false;
  }
  if (it.error()) return Fail(why, "truncated attribute");
  return true;
}

bool GetName(const nl::Attr& a, std::string* out) { return nl::GetString(a, out) && out->size() <= kNameMax; }

void Comment(const nl::Attr& a, uint8_t type, std::string* out) {
  out->clear();
  UdataString(a.data, a.len, type, out);
}

// Whether user data holds only well-formed records that known accepts (the
// ones podnet decodes or writes itself): then the listing has all of it, and
// the attribute is not kept raw beside the comment.
template <typename Known>
bool UdataDecoded(const nl::Attr& a, Known&& known) {
  for (size_t off = 0; off < a.len;) {
    if (a.len - off < 2) return false;
    uint8_t type = a.data[off];
    size_t n = a.data[off + 1];
    if (n > a.len - off - 2 || !known(type, a.data + off + 2, n)) return false;
    off += 2 + n;
  }
  return true;
}

// Keeps user data raw unless it holds only records known accepts.
template <typename Known>
void KeepUdata(std::vector<RawAttr>* unknown, const nl::Attr& a, Known&& known) {
  if (!UdataDecoded(a, known)) Keep(unknown, a);
}

// A table's, chain's or rule's user data is decoded when it holds only the comment.
bool CommentOnly(uint8_t type, const uint8_t*, size_t) { return type == 0; }

// A set's: the key's byte order (which podnet writes too) and the comment.
bool SetUdataKnown(uint8_t type, const uint8_t*, size_t) {
  return type == kUdataSetKeyByteorder || type == kUdataSetComment;
}

// libnftnl's NFTNL_UDATA_SET_ELEM_FLAGS record (little-endian flags) and its
// NFTNL_SET_ELEM_F_INTERVAL_OPEN: nft's mark of a range open to the top.
constexpr uint8_t kUdataElemFlags = 1;
constexpr uint32_t kElemIntervalOpen = 1;

// An element's: the comment, and the mark of a range open to the top, which
// the listed range shows.
bool ElementUdataKnown(uint8_t type, const uint8_t* value, size_t n) {
  if (type == kUdataElemComment) return true;
  if (type != kUdataElemFlags || n != 4) return false;
  uint32_t flags;
  memcpy(&flags, value, 4);
  return le32toh(flags) == kElemIntervalOpen;
}

// Newer kernels' NFTA_SET_TYPE (the backend's name) and NFTA_SET_COUNT (the
// elements held), which listings leave out; older headers lack the names.
constexpr uint16_t kNftaSetType = 19;
constexpr uint16_t kNftaSetCount = 20;

// The first raw attribute of that type, or nullptr.
const RawAttr* FirstOf(const std::vector<RawAttr>& attrs, uint16_t type) {
  for (const RawAttr& a : attrs) {
    if (a.type == type) return &a;
  }
  return nullptr;
}

uint32_t Be32At(const std::vector<uint8_t>& b) {
  uint32_t v;
  memcpy(&v, b.data(), 4);
  return be32toh(v);
}

// Drops the raw attributes of type a or b: they are decoded.
void TakeOut(std::vector<RawAttr>* attrs, uint16_t a, uint16_t b) {
  std::vector<RawAttr> rest;
  for (RawAttr& r : *attrs) {
    if (r.type != a && r.type != b) rest.push_back(std::move(r));
  }
  *attrs = std::move(rest);
}

// A map's data type and length, taken out of the raw attributes when the set
// is a map and both are there with 4 bytes; else they stay raw.
void DecodeMapData(Set* s) {
  if ((s->flags & NFT_SET_MAP) == 0) return;
  const RawAttr* type = FirstOf(s->unknown, NFTA_SET_DATA_TYPE);
  const RawAttr* len = FirstOf(s->unknown, NFTA_SET_DATA_LEN);
  if (type == nullptr || len == nullptr || type->data.size() != 4 || len->data.size() != 4) return;
  s->isMap = true;
  s->dataType = Be32At(type->data);
  s->dataLen = Be32At(len->data);
  TakeOut(&s->unknown, NFTA_SET_DATA_TYPE, NFTA_SET_DATA_LEN);
}

// NFTA_SET_ELEM_DATA's nest: exactly one NFTA_DATA_VALUE, or exactly one
// NFTA_DATA_VERDICT of one code and, for jump and goto only, one non-empty
// chain. False for any other form (the attribute then stays raw).
bool DecodeElementData(const std::vector<uint8_t>& nest, ElementData* out) {
  nl::AttrIter top(nest.data(), nest.size());
  nl::Attr d, extra;
  if (!top.Next(&d) || top.Next(&extra) || top.error()) return false;
  if (d.type == NFTA_DATA_VALUE) {
    out->value.assign(d.data, d.data + d.len);
    return true;
  }
  if (d.type != NFTA_DATA_VERDICT) return false;
  nl::AttrIter parts(d.data, d.len);
  nl::Attr p;
  bool hasCode = false, hasChain = false;
  std::string chain;
  while (parts.Next(&p)) {
    if (p.type == NFTA_VERDICT_CODE && !hasCode && p.len == 4) {
      uint32_t code;
      memcpy(&code, p.data, 4);
      out->code = static_cast<int32_t>(be32toh(code));
      hasCode = true;
    } else if (p.type == NFTA_VERDICT_CHAIN && !hasChain) {
      chain.assign(reinterpret_cast<const char*>(p.data), p.len);
      hasChain = true;
    } else {
      return false;
    }
  }
  if (parts.error() || !hasCode) return false;
  out->verdict = true;
  if (out->code != NFT_JUMP && out->code != NFT_GOTO) return !hasChain;
  while (!chain.empty() && chain.back() == '\0') chain.pop_back();
  out->chain = std::move(chain);
  return !out->chain.empty();
}

// An element's data taken out of its raw attributes when it has exactly one
// NFTA_SET_ELEM_DATA in a form podnet decodes.
void DecodeElementDataAttr(Element* e) {
  const RawAttr* only = nullptr;
  for (const RawAttr& a : e->unknown) {
    if (a.type != NFTA_SET_ELEM_DATA) continue;
    if (only != nullptr) return;
    only = &a;
  }
  if (only == nullptr || !DecodeElementData(only->data, &e->data)) {
    e->data = ElementData();
    return;
  }
  e->hasData = true;
  TakeOut(&e->unknown, NFTA_SET_ELEM_DATA, NFTA_SET_ELEM_DATA);
}

bool CheckName(const std::string& name, const char** why) {
  if (name.empty() || name.size() > kNameMax) return Fail(why, "name empty or longer than NFT_NAME_MAXLEN - 1");
  if (memchr(name.data(), 0, name.size()) != nullptr) return Fail(why, "name holds a NUL byte");
  return true;
}

bool CheckComment(const char* comment, size_t len, const char** why) {
  if (len > kCommentMax) return Fail(why, "comment longer than 128 bytes");
  if (memchr(comment, 0, len) != nullptr) return Fail(why, "comment holds a NUL byte");
  return true;
}

bool CheckComment(const std::string& comment, const char** why) { return CheckComment(comment.data(), comment.size(), why); }

size_t Begin(nl::Writer& w, uint8_t msg, uint16_t flags, uint8_t family) {
  return w.BeginMessage(MsgType(msg), flags | NLM_F_REQUEST | NLM_F_ACK, 0, family);
}

bool EncodeTable(nl::Writer& w, const Op& op, const char** why) {
  const Table& t = op.table;
  if (!CheckName(t.name, why) || !CheckComment(t.comment, why)) return false;
  size_t off = Begin(w, op.del ? NFT_MSG_DELTABLE : NFT_MSG_NEWTABLE, op.flags, t.family);
  w.PutString(NFTA_TABLE_NAME, t.name);
  if (!op.del) {
    PutNet32(w, NFTA_TABLE_FLAGS, t.flags);
    PutComment(w, NFTA_TABLE_USERDATA, kUdataTableComment, t.comment);
  }
  w.EndMessage(off);
  return true;
}

// nft flushes a table by deleting its rules: DELRULE naming only the table.
bool EncodeFlushTable(nl::Writer& w, const Op& op, const char** why) {
  if (!CheckName(op.table.name, why)) return false;
  size_t off = Begin(w, NFT_MSG_DELRULE, op.flags, op.table.family);
  w.PutString(NFTA_RULE_TABLE, op.table.name);
  w.EndMessage(off);
  return true;
}

bool EncodeChain(nl::Writer& w, const Op& op, const char** why) {
  const Chain& c = op.chain;
  if (!CheckName(c.table, why) || !CheckName(c.name, why) || !CheckComment(c.comment, why)) return false;
  if (c.hasHook && (c.type.empty() || c.type.size() > kNameMax)) return Fail(why, "base chain without a type");
  size_t off = Begin(w, op.del ? NFT_MSG_DELCHAIN : NFT_MSG_NEWCHAIN, op.flags, c.family);
  w.PutString(NFTA_CHAIN_TABLE, c.table);
  w.PutString(NFTA_CHAIN_NAME, c.name);
  if (!op.del) {
    // nft's order: type, policy, hook.
    if (c.hasHook) w.PutString(NFTA_CHAIN_TYPE, c.type);
    if (c.hasHook && c.hasPolicy) PutNet32(w, NFTA_CHAIN_POLICY, c.policy);
    if (c.hasHook) {
      size_t hook = w.BeginNest(NFTA_CHAIN_HOOK);
      PutNet32(w, NFTA_HOOK_HOOKNUM, c.hook);
      PutNet32(w, NFTA_HOOK_PRIORITY, static_cast<uint32_t>(c.priority));
      w.EndNest(hook);
    }
    PutComment(w, NFTA_CHAIN_USERDATA, kUdataChainComment, c.comment);
  }
  w.EndMessage(off);
  return true;
}

// nft's order: table, chain, handle (delete), expressions, position, user data.
bool EncodeRule(nl::Writer& w, const Op& op, const char** why) {
  const Rule& r = op.rule;
  if (!CheckName(r.table, why) || !CheckName(r.chain, why) || !CheckComment(r.comment, why)) return false;
  size_t off = Begin(w, op.del ? NFT_MSG_DELRULE : NFT_MSG_NEWRULE, op.flags, r.family);
  w.PutString(NFTA_RULE_TABLE, r.table);
  w.PutString(NFTA_RULE_CHAIN, r.chain);
  if (op.del) {
    if (r.hasHandle) PutNet64(w, NFTA_RULE_HANDLE, r.handle);
  } else {
    if (r.exprs.empty()) return Fail(why, "rule without expressions");
    if (!EncodeExprs(w, NFTA_RULE_EXPRESSIONS, r.exprs, why)) return false;
    if (r.hasPosition) PutNet64(w, NFTA_RULE_POSITION, r.position);
    PutComment(w, NFTA_RULE_USERDATA, kUdataRuleComment, r.comment);
  }
  w.EndMessage(off);
  return true;
}

bool EncodeSet(nl::Writer& w, const Op& op, const char** why) {
  const Set& s = op.set;
  if (!CheckName(s.table, why) || !CheckName(s.name, why) || !CheckComment(s.comment, why)) return false;
  size_t off = Begin(w, op.del ? NFT_MSG_DELSET : NFT_MSG_NEWSET, op.flags, s.family);
  w.PutString(NFTA_SET_TABLE, s.table);
  w.PutString(NFTA_SET_NAME, s.name);
  if (!op.del) {
    if (s.keyLen == 0 || s.keyLen > NFT_DATA_VALUE_MAXLEN) return Fail(why, "set key length out of range");
    PutNet32(w, NFTA_SET_FLAGS, s.flags);
    PutNet32(w, NFTA_SET_KEY_TYPE, s.keyType);
    PutNet32(w, NFTA_SET_KEY_LEN, s.keyLen);
    PutNet32(w, NFTA_SET_ID, s.id);
    if (s.size != 0) {
      // The size is also what the kernel sizes the set's hash by: a set without one starts small and grows.
      size_t desc = w.BeginNest(NFTA_SET_DESC);
      PutNet32(w, NFTA_SET_DESC_SIZE, s.size);
      w.EndNest(desc);
    }
    // nft reads the key's byte order from here to print the elements.
    std::vector<uint8_t> udata;
    uint32_t order = kByteorderBigEndian;
    PutUdataRecord(&udata, kUdataSetKeyByteorder, &order, sizeof order);
    if (!s.comment.empty()) PutUdataComment(&udata, kUdataSetComment, s.comment);
    w.Put(NFTA_SET_USERDATA, udata.data(), udata.size());
  }
  w.EndMessage(off);
  return true;
}

// One or more NEWSETELEM / DELSETELEM messages: a new one whenever the
// elements nest would outgrow its 16-bit length.
bool EncodeElements(nl::Writer& w, const Op& op, uint32_t opIndex, std::vector<BatchMessage>* messages,
                    const char** why) {
  const Set& s = op.set;
  if (!CheckName(s.table, why) || !CheckName(s.name, why)) return false;
  if (op.elements.empty()) return Fail(why, "element op without elements");
  const ElementRecords& elements = op.elements;
  for (size_t at = 0; at < elements.byteLength();) {
    ElementRecord e = elements.Next(&at);
    if (e.keyLen > NFT_DATA_VALUE_MAXLEN) return Fail(why, "element key length out of range");
    if (e.comment != nullptr && !CheckComment(e.comment, e.commentLen, why)) return false;
  }
  uint8_t type = op.del ? NFT_MSG_DELSETELEM : NFT_MSG_NEWSETELEM;
  size_t i = 0;
  size_t at = 0;
  while (i < elements.size()) {
    BatchMessage m;
    m.op = opIndex;
    m.firstElement = static_cast<uint32_t>(i);
    m.offset = Begin(w, type, op.flags, s.family);
    w.PutString(NFTA_SET_ELEM_LIST_TABLE, s.table);
    w.PutString(NFTA_SET_ELEM_LIST_SET, s.name);
    if (s.id != 0) PutNet32(w, NFTA_SET_ELEM_LIST_SET_ID, s.id);
    size_t list = w.BeginNest(NFTA_SET_ELEM_LIST_ELEMENTS);
    do {
      ElementRecord e = elements.Next(&at);
      size_t elem = w.BeginNest(NFTA_LIST_ELEM);
      size_t key = w.BeginNest(NFTA_SET_ELEM_KEY);
      w.Put(NFTA_DATA_VALUE, e.key, e.keyLen);
      w.EndNest(key);
      if (e.flags & kRecordIntervalEnd) PutNet32(w, NFTA_SET_ELEM_FLAGS, NFT_SET_ELEM_INTERVAL_END);
      if (!op.del && e.commentLen > 0) {
        // libnftnl's user data record, built on the stack: this runs once per element.
        uint8_t udata[2 + kCommentMax + 1];
        udata[0] = kUdataElemComment;
        udata[1] = static_cast<uint8_t>(e.commentLen + 1);
        memcpy(udata + 2, e.comment, e.commentLen);
        udata[2 + e.commentLen] = 0;
        w.Put(NFTA_SET_ELEM_USERDATA, udata, 3 + e.commentLen);
      }
      w.EndNest(elem);
      i++;
    } while (i < elements.size() && w.size() - list < kElementsNestMax);
    w.EndNest(list);
    w.EndMessage(m.offset);
    m.elementCount = static_cast<uint32_t>(i - m.firstElement);
    messages->push_back(m);
  }
  return true;
}

void SetSeq(nl::Writer& w, size_t offset, uint32_t seq) {
  // The Writer's bytes are the caller's to patch: nlmsg_seq is at offset 8.
  memcpy(const_cast<uint8_t*>(w.data()) + offset + 8, &seq, sizeof seq);
}

size_t BatchMarker(nl::Writer& w, uint16_t type, uint16_t flags, uint32_t genId = 0) {
  size_t off = w.BeginMessage(type, flags, 0, NFPROTO_UNSPEC);
  // res_id names the subsystem the batch is for, in network order.
  uint16_t resId = htobe16(NFNL_SUBSYS_NFTABLES);
  memcpy(const_cast<uint8_t*>(w.data()) + off + sizeof(nlmsghdr) + 2, &resId, sizeof resId);
  if (genId != 0) PutNet32(w, NFNL_BATCH_GENID, genId);
  w.EndMessage(off);
  return off;
}

}  // namespace

bool EncodeBatch(nl::Writer& w, const std::vector<Op>& ops, std::vector<BatchMessage>* messages, size_t* beginOffset,
                 size_t* endOffset, const char** why, uint32_t genId) {
  messages->clear();
  *beginOffset = BatchMarker(w, NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST | NLM_F_ACK, genId);
  for (size_t i = 0; i < ops.size(); i++) {
    const Op& op = ops[i];
    uint32_t index = static_cast<uint32_t>(i);
    if (op.kind == Op::kElements) {
      if (!EncodeElements(w, op, index, messages, why)) return false;
      continue;
    }
    BatchMessage m;
    m.op = index;
    m.offset = w.size();
    bool ok = false;
    switch (op.kind) {
      case Op::kTable: ok = EncodeTable(w, op, why); break;
      case Op::kChain: ok = EncodeChain(w, op, why); break;
      case Op::kSet: ok = EncodeSet(w, op, why); break;
      case Op::kRule: ok = EncodeRule(w, op, why); break;
      case Op::kFlushTable: ok = EncodeFlushTable(w, op, why); break;
      default: ok = Fail(why, "unknown op kind"); break;
    }
    if (!ok) return false;
    messages->push_back(m);
  }
  // END is not acknowledged by the kernel whatever its flags say.
  *endOffset = BatchMarker(w, NFNL_MSG_BATCH_END, NLM_F_REQUEST);
  return true;
}

void SetBatchSeqs(nl::Writer& w, uint32_t first, size_t beginOffset, const std::vector<BatchMessage>& messages,
                  size_t endOffset) {
  SetSeq(w, beginOffset, first);
  for (size_t i = 0; i < messages.size(); i++) SetSeq(w, messages[i].offset, first + 1 + static_cast<uint32_t>(i));
  SetSeq(w, endOffset, first + 1 + static_cast<uint32_t>(messages.size()));
}

void AskOneAck(nl::Writer& w, size_t beginOffset, const std::vector<BatchMessage>& messages) {
  auto clearAck = [&w](size_t offset) {
    uint16_t flags;
    uint8_t* at = const_cast<uint8_t*>(w.data()) + offset + 6;  // nlmsg_flags
    memcpy(&flags, at, sizeof flags);
    flags &= static_cast<uint16_t>(~NLM_F_ACK);
    memcpy(at, &flags, sizeof flags);
  };
  if (messages.empty()) return;
  clearAck(beginOffset);
  for (size_t i = 0; i + 1 < messages.size(); i++) clearAck(messages[i].offset);
}

static size_t BeginDump(nl::Writer& w, uint8_t msg, uint32_t seq, uint8_t family) {
  return w.BeginMessage(MsgType(msg), NLM_F_REQUEST | NLM_F_DUMP, seq, family);
}

void EncodeGetTables(nl::Writer& w, uint32_t seq, uint8_t family) { w.EndMessage(BeginDump(w, NFT_MSG_GETTABLE, seq, family)); }

void EncodeGetChains(nl::Writer& w, uint32_t seq, uint8_t family, const std::string& table) {
  size_t off = BeginDump(w, NFT_MSG_GETCHAIN, seq, family);
  if (!table.empty()) w.PutString(NFTA_CHAIN_TABLE, table);
  w.EndMessage(off);
}

void EncodeGetSets(nl::Writer& w, uint32_t seq, uint8_t family, const std::string& table) {
  size_t off = BeginDump(w, NFT_MSG_GETSET, seq, family);
  if (!table.empty()) w.PutString(NFTA_SET_TABLE, table);
  w.EndMessage(off);
}

void EncodeGetRules(nl::Writer& w, uint32_t seq, uint8_t family, const std::string& table) {
  size_t off = BeginDump(w, NFT_MSG_GETRULE, seq, family);
  if (!table.empty()) w.PutString(NFTA_RULE_TABLE, table);
  w.EndMessage(off);
}

void EncodeGetElements(nl::Writer& w, uint32_t seq, uint8_t family, const std::string& table, const std::string& set) {
  size_t off = BeginDump(w, NFT_MSG_GETSETELEM, seq, family);
  w.PutString(NFTA_SET_ELEM_LIST_TABLE, table);
  w.PutString(NFTA_SET_ELEM_LIST_SET, set);
  w.EndMessage(off);
}

void EncodeGetSet(nl::Writer& w, uint32_t seq, uint8_t family, const std::string& table, const std::string& set) {
  size_t off = w.BeginMessage(MsgType(NFT_MSG_GETSET), NLM_F_REQUEST | NLM_F_ACK, seq, family);
  w.PutString(NFTA_SET_TABLE, table);
  w.PutString(NFTA_SET_NAME, set);
  w.EndMessage(off);
}

void EncodeGetElement(nl::Writer& w, uint32_t seq, uint8_t family, const std::string& table, const std::string& set,
                      const std::vector<uint8_t>& key) {
  size_t off = w.BeginMessage(MsgType(NFT_MSG_GETSETELEM), NLM_F_REQUEST | NLM_F_ACK, seq, family);
  w.PutString(NFTA_SET_ELEM_LIST_TABLE, table);
  w.PutString(NFTA_SET_ELEM_LIST_SET, set);
  size_t list = w.BeginNest(NFTA_SET_ELEM_LIST_ELEMENTS);
  size_t elem = w.BeginNest(NFTA_LIST_ELEM);
  size_t k = w.BeginNest(NFTA_SET_ELEM_KEY);
  w.Put(NFTA_DATA_VALUE, key.data(), key.size());
  w.EndNest(k);
  w.EndNest(elem);
  w.EndNest(list);
  w.EndMessage(off);
}

void EncodeGetGen(nl::Writer& w, uint32_t seq) {
  w.EndMessage(w.BeginMessage(MsgType(NFT_MSG_GETGEN), NLM_F_REQUEST | NLM_F_ACK, seq, NFPROTO_UNSPEC));
}

bool DecodeGen(const uint8_t* payload, size_t len, uint32_t* genId, const char** why) {
  uint8_t family = 0;
  bool has = false;
  bool ok = ForEachAttr(payload, len, &family, why, [&](const nl::Attr& a) {
    if (a.type != NFTA_GEN_ID) return true;  // the pid and name of the last committer are not podnet's business
    if (!nl::GetBe32(a, genId)) return Fail(why, "NFTA_GEN_ID not 4 bytes");
    has = true;
    return true;
  });
  if (!ok) return false;
  if (!has) return Fail(why, "NEWGEN without NFTA_GEN_ID");
  if (*genId == 0) return Fail(why, "NFTA_GEN_ID 0, which no kernel hands out");
  return true;
}

bool UdataString(const uint8_t* data, size_t len, uint8_t type, std::string* out) {
  size_t off = 0;
  while (off + 2 <= len) {
    uint8_t t = data[off];
    size_t n = data[off + 1];
    if (n > len - off - 2) return false;
    const uint8_t* value = data + off + 2;
    if (t == type) {
      if (n == 0 || value[n - 1] != 0) return false;
      const void* nul = memchr(value, 0, n);
      out->assign(reinterpret_cast<const char*>(value), static_cast<const uint8_t*>(nul) - value);
      return true;
    }
    off += 2 + n;
  }
  return false;
}

bool DecodeTable(const uint8_t* payload, size_t len, Table* out, const char** why) {
  bool named = false;
  bool ok = ForEachAttr(payload, len, &out->family, why, [&](const nl::Attr& a) {
    switch (a.type) {
      case NFTA_TABLE_NAME:
        if (!GetName(a, &out->name)) return Fail(why, "NFTA_TABLE_NAME not a name");
        named = true;
        return true;
      case NFTA_TABLE_FLAGS:
        if (!nl::GetBe32(a, &out->flags)) return Fail(why, "NFTA_TABLE_FLAGS not 4 bytes");
        return true;
      case NFTA_TABLE_USE:
        if (!nl::GetBe32(a, &out->use)) return Fail(why, "NFTA_TABLE_USE not 4 bytes");
        return true;
      case NFTA_TABLE_HANDLE:
        if (!nl::GetBe64(a, &out->handle)) return Fail(why, "NFTA_TABLE_HANDLE not 8 bytes");
        out->hasHandle = true;
        return true;
      case NFTA_TABLE_USERDATA:
        Comment(a, kUdataTableComment, &out->comment);
        KeepUdata(&out->unknown, a, CommentOnly);
        return true;
      default:
        Keep(&out->unknown, a);
        return true;
    }
  });
  if (!ok) return false;
  if (!named) return Fail(why, "table without NFTA_TABLE_NAME");
  return true;
}

// A base chain's hook: number and priority decoded; a device (netdev) or
// anything newer is kept raw with the whole hook attribute.
static bool DecodeHook(const nl::Attr& a, Chain* out, const char** why) {
  nl::AttrIter it(a.data, a.len);
  nl::Attr h;
  bool hasNum = false, hasPrio = false, extra = false;
  while (it.Next(&h)) {
    if (h.type == NFTA_HOOK_HOOKNUM) {
      if (!nl::GetBe32(h, &out->hook)) return Fail(why, "NFTA_HOOK_HOOKNUM not 4 bytes");
      hasNum = true;
    } else if (h.type == NFTA_HOOK_PRIORITY) {
      uint32_t p;
      if (!nl::GetBe32(h, &p)) return Fail(why, "NFTA_HOOK_PRIORITY not 4 bytes");
      out->priority = static_cast<int32_t>(p);
      hasPrio = true;
    } else {
      extra = true;
    }
  }
  if (it.error()) return Fail(why, "truncated NFTA_CHAIN_HOOK");
  if (!hasNum || !hasPrio) return Fail(why, "NFTA_CHAIN_HOOK without hook number and priority");
  out->hasHook = true;
  if (extra) Keep(&out->unknown, a);
  return true;
}

bool DecodeChain(const uint8_t* payload, size_t len, Chain* out, const char** why) {
  bool named = false, inTable = false;
  bool ok = ForEachAttr(payload, len, &out->family, why, [&](const nl::Attr& a) {
    switch (a.type) {
      case NFTA_CHAIN_TABLE:
        if (!GetName(a, &out->table)) return Fail(why, "NFTA_CHAIN_TABLE not a name");
        inTable = true;
        return true;
      case NFTA_CHAIN_NAME:
        if (!GetName(a, &out->name)) return Fail(why, "NFTA_CHAIN_NAME not a name");
        named = true;
        return true;
      case NFTA_CHAIN_HANDLE:
        if (!nl::GetBe64(a, &out->handle)) return Fail(why, "NFTA_CHAIN_HANDLE not 8 bytes");
        out->hasHandle = true;
        return true;
      case NFTA_CHAIN_HOOK:
        return DecodeHook(a, out, why);
      case NFTA_CHAIN_POLICY:
        if (!nl::GetBe32(a, &out->policy)) return Fail(why, "NFTA_CHAIN_POLICY not 4 bytes");
        out->hasPolicy = true;
        return true;
      case NFTA_CHAIN_TYPE:
        if (!GetName(a, &out->type)) return Fail(why, "NFTA_CHAIN_TYPE not a string");
        return true;
      case NFTA_CHAIN_USE:
        if (!nl::GetBe32(a, &out->use)) return Fail(why, "NFTA_CHAIN_USE not 4 bytes");
        return true;
      case NFTA_CHAIN_FLAGS:
        if (!nl::GetBe32(a, &out->flags)) return Fail(why, "NFTA_CHAIN_FLAGS not 4 bytes");
        return true;
      case NFTA_CHAIN_USERDATA:
        Comment(a, kUdataChainComment, &out->comment);
        KeepUdata(&out->unknown, a, CommentOnly);
        return true;
      default:
        Keep(&out->unknown, a);
        return true;
    }
  });
  if (!ok) return false;
  if (!named || !inTable) return Fail(why, "chain without NFTA_CHAIN_TABLE and NFTA_CHAIN_NAME");
  return true;
}

// A set's description: the size decoded; concatenation fields or anything
// newer kept raw with the whole attribute.
static bool DecodeSetDesc(const nl::Attr& a, Set* out, const char** why) {
  nl::AttrIter it(a.data, a.len);
  nl::Attr d;
  bool extra = false;
  while (it.Next(&d)) {
    if (d.type == NFTA_SET_DESC_SIZE) {
      if (!nl::GetBe32(d, &out->size)) return Fail(why, "NFTA_SET_DESC_SIZE not 4 bytes");
    } else {
      extra = true;
    }
  }
  if (it.error()) return Fail(why, "truncated NFTA_SET_DESC");
  if (extra) Keep(&out->unknown, a);
  return true;
}

bool DecodeSet(const uint8_t* payload, size_t len, Set* out, const char** why) {
  bool named = false, inTable = false;
  bool ok = ForEachAttr(payload, len, &out->family, why, [&](const nl::Attr& a) {
    switch (a.type) {
      case NFTA_SET_TABLE:
        if (!GetName(a, &out->table)) return Fail(why, "NFTA_SET_TABLE not a name");
        inTable = true;
        return true;
      case NFTA_SET_NAME:
        if (!GetName(a, &out->name)) return Fail(why, "NFTA_SET_NAME not a name");
        named = true;
        return true;
      case NFTA_SET_FLAGS:
        if (!nl::GetBe32(a, &out->flags)) return Fail(why, "NFTA_SET_FLAGS not 4 bytes");
        return true;
      case NFTA_SET_KEY_TYPE:
        if (!nl::GetBe32(a, &out->keyType)) return Fail(why, "NFTA_SET_KEY_TYPE not 4 bytes");
        return true;
      case NFTA_SET_KEY_LEN:
        if (!nl::GetBe32(a, &out->keyLen)) return Fail(why, "NFTA_SET_KEY_LEN not 4 bytes");
        return true;
      case NFTA_SET_HANDLE:
        if (!nl::GetBe64(a, &out->handle)) return Fail(why, "NFTA_SET_HANDLE not 8 bytes");
        out->hasHandle = true;
        return true;
      case NFTA_SET_DESC:
        return DecodeSetDesc(a, out, why);
      case NFTA_SET_USERDATA:
        Comment(a, kUdataSetComment, &out->comment);
        KeepUdata(&out->unknown, a, SetUdataKnown);
        return true;
      case kNftaSetType:
      case kNftaSetCount:
        return true;
      default:
        Keep(&out->unknown, a);
        return true;
    }
  });
  if (!ok) return false;
  if (!named || !inTable) return Fail(why, "set without NFTA_SET_TABLE and NFTA_SET_NAME");
  DecodeMapData(out);
  return true;
}

bool DecodeRule(const uint8_t* payload, size_t len, Rule* out, const char** why) {
  bool inChain = false, inTable = false;
  bool ok = ForEachAttr(payload, len, &out->family, why, [&](const nl::Attr& a) {
    switch (a.type) {
      case NFTA_RULE_TABLE:
        if (!GetName(a, &out->table)) return Fail(why, "NFTA_RULE_TABLE not a name");
        inTable = true;
        return true;
      case NFTA_RULE_CHAIN:
        if (!GetName(a, &out->chain)) return Fail(why, "NFTA_RULE_CHAIN not a name");
        inChain = true;
        return true;
      case NFTA_RULE_HANDLE:
        if (!nl::GetBe64(a, &out->handle)) return Fail(why, "NFTA_RULE_HANDLE not 8 bytes");
        out->hasHandle = true;
        return true;
      case NFTA_RULE_POSITION:
        if (!nl::GetBe64(a, &out->position)) return Fail(why, "NFTA_RULE_POSITION not 8 bytes");
        out->hasPosition = true;
        return true;
      case NFTA_RULE_EXPRESSIONS:
        out->exprs.clear();
        return DecodeExprs(a.data, a.len, &out->exprs, why);
      case NFTA_RULE_USERDATA:
        out->comment.clear();
        out->hasComment = UdataString(a.data, a.len, kUdataRuleComment, &out->comment);
        KeepUdata(&out->unknown, a, CommentOnly);
        return true;
      default:
        Keep(&out->unknown, a);
        return true;
    }
  });
  if (!ok) return false;
  if (!inChain || !inTable) return Fail(why, "rule without NFTA_RULE_TABLE and NFTA_RULE_CHAIN");
  return true;
}

static bool DecodeElement(const nl::Attr& item, Element* out, const char** why) {
  nl::AttrIter it(item.data, item.len);
  nl::Attr a;
  while (it.Next(&a)) {
    switch (a.type) {
      case NFTA_SET_ELEM_KEY: {
        nl::Attr data[NFTA_DATA_MAX + 1];
        if (!nl::ParseAttrs(a.data, a.len, data, NFTA_DATA_MAX)) return Fail(why, "truncated NFTA_SET_ELEM_KEY");
        const nl::Attr& v = data[NFTA_DATA_VALUE];
        if (!v.present() || v.len == 0 || v.len > NFT_DATA_VALUE_MAXLEN) {
          return Fail(why, "NFTA_SET_ELEM_KEY without a value of 1..64 bytes");
        }
        out->key.assign(v.data, v.data + v.len);
        break;
      }
      case NFTA_SET_ELEM_FLAGS:
        if (!nl::GetBe32(a, &out->flags)) return Fail(why, "NFTA_SET_ELEM_FLAGS not 4 bytes");
        break;
      case NFTA_SET_ELEM_USERDATA:
        // A later user data attribute replaces an earlier one's comment, or its absence.
        out->comment.clear();
        out->hasComment = UdataString(a.data, a.len, kUdataElemComment, &out->comment);
        KeepUdata(&out->unknown, a, ElementUdataKnown);
        break;
      default:
        Keep(&out->unknown, a);
        break;
    }
  }
  if (it.error()) return Fail(why, "truncated set element");
  DecodeElementDataAttr(out);
  return true;
}

bool DecodeElements(const uint8_t* payload, size_t len, uint8_t* family, std::string* table, std::string* set,
                    std::vector<Element>* out, const char** why) {
  return ForEachAttr(payload, len, family, why, [&](const nl::Attr& a) {
    switch (a.type) {
      case NFTA_SET_ELEM_LIST_TABLE:
        if (!GetName(a, table)) return Fail(why, "NFTA_SET_ELEM_LIST_TABLE not a name");
        return true;
      case NFTA_SET_ELEM_LIST_SET:
        if (!GetName(a, set)) return Fail(why, "NFTA_SET_ELEM_LIST_SET not a name");
        return true;
      case NFTA_SET_ELEM_LIST_ELEMENTS: {
        nl::AttrIter it(a.data, a.len);
        nl::Attr item;
        while (it.Next(&item)) {
          if (item.type != NFTA_LIST_ELEM) return Fail(why, "NFTA_SET_ELEM_LIST_ELEMENTS holds a non-element");
          Element e;
          if (!DecodeElement(item, &e, why)) return false;
          out->push_back(std::move(e));
        }
        if (it.error()) return Fail(why, "truncated NFTA_SET_ELEM_LIST_ELEMENTS");
        return true;
      }
      default:
        return true;
    }
  });
}

}  // namespace podnet::nft
