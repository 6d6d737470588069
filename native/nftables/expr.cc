#include "nftables/expr.h"

#include <endian.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <string.h>

#include <initializer_list>

namespace podnet::nft {

namespace {

using K = FieldKind;

struct Schema {
  const char* name;
  const FieldSpec* fields;
  size_t count;
};

// Each list is in the order libnftnl writes the attributes.
constexpr FieldSpec kPayload[] = {
    {NFTA_PAYLOAD_SREG, "sreg", K::kU32},
    {NFTA_PAYLOAD_DREG, "dreg", K::kU32},
    {NFTA_PAYLOAD_BASE, "base", K::kU32},
    {NFTA_PAYLOAD_OFFSET, "offset", K::kU32},
    {NFTA_PAYLOAD_LEN, "len", K::kU32},
    {NFTA_PAYLOAD_CSUM_TYPE, "csumType", K::kU32},
    {NFTA_PAYLOAD_CSUM_OFFSET, "csumOffset", K::kU32},
    {NFTA_PAYLOAD_CSUM_FLAGS, "csumFlags", K::kU32},
};
constexpr FieldSpec kMeta[] = {
    {NFTA_META_KEY, "key", K::kU32},
    {NFTA_META_DREG, "dreg", K::kU32},
    {NFTA_META_SREG, "sreg", K::kU32},
};
constexpr FieldSpec kCt[] = {
    {NFTA_CT_KEY, "key", K::kU32},
    {NFTA_CT_DREG, "dreg", K::kU32},
    {NFTA_CT_DIRECTION, "direction", K::kU8},
    {NFTA_CT_SREG, "sreg", K::kU32},
};
constexpr FieldSpec kCmp[] = {
    {NFTA_CMP_SREG, "sreg", K::kU32},
    {NFTA_CMP_OP, "op", K::kU32},
    {NFTA_CMP_DATA, "data", K::kData},
};
constexpr FieldSpec kBitwise[] = {
    {NFTA_BITWISE_SREG, "sreg", K::kU32},
    {NFTA_BITWISE_DREG, "dreg", K::kU32},
    {NFTA_BITWISE_OP, "op", K::kU32},
    {NFTA_BITWISE_LEN, "len", K::kU32},
    {NFTA_BITWISE_MASK, "mask", K::kData},
    {NFTA_BITWISE_XOR, "xor", K::kData},
    {NFTA_BITWISE_DATA, "data", K::kData},
};
constexpr FieldSpec kLookup[] = {
    {NFTA_LOOKUP_SREG, "sreg", K::kU32},
    {NFTA_LOOKUP_DREG, "dreg", K::kU32},
    {NFTA_LOOKUP_SET, "set", K::kString},
    {NFTA_LOOKUP_SET_ID, "setId", K::kU32},
    {NFTA_LOOKUP_FLAGS, "flags", K::kU32},
};
// NFTA_IMMEDIATE_DATA holds a value or a verdict: two fields on one attribute.
constexpr FieldSpec kImmediate[] = {
    {NFTA_IMMEDIATE_DREG, "dreg", K::kU32},
    {NFTA_IMMEDIATE_DATA, "data", K::kData},
    {NFTA_IMMEDIATE_DATA, "verdict", K::kVerdict},
};
constexpr FieldSpec kCounter[] = {
    {NFTA_COUNTER_BYTES, "bytes", K::kU64},
    {NFTA_COUNTER_PACKETS, "packets", K::kU64},
    {NFTA_COUNTER_PAD, "pad", K::kPad},
};
constexpr FieldSpec kRedir[] = {
    {NFTA_REDIR_REG_PROTO_MIN, "regProtoMin", K::kU32},
    {NFTA_REDIR_REG_PROTO_MAX, "regProtoMax", K::kU32},
    {NFTA_REDIR_FLAGS, "flags", K::kU32},
};
constexpr FieldSpec kNat[] = {
    {NFTA_NAT_TYPE, "type", K::kU32},
    {NFTA_NAT_FAMILY, "family", K::kU32},
    {NFTA_NAT_REG_ADDR_MIN, "regAddrMin", K::kU32},
    {NFTA_NAT_REG_ADDR_MAX, "regAddrMax", K::kU32},
    {NFTA_NAT_REG_PROTO_MIN, "regProtoMin", K::kU32},
    {NFTA_NAT_REG_PROTO_MAX, "regProtoMax", K::kU32},
    {NFTA_NAT_FLAGS, "flags", K::kU32},
};
constexpr FieldSpec kMasq[] = {
    {NFTA_MASQ_FLAGS, "flags", K::kU32},
    {NFTA_MASQ_REG_PROTO_MIN, "regProtoMin", K::kU32},
    {NFTA_MASQ_REG_PROTO_MAX, "regProtoMax", K::kU32},
};

template <size_t N>
constexpr Schema Of(const char* name, const FieldSpec (&fields)[N]) {
  return Schema{name, fields, N};
}

constexpr Schema kSchemas[] = {
    Of("payload", kPayload), Of("meta", kMeta),       Of("ct", kCt),           Of("cmp", kCmp),
    Of("bitwise", kBitwise), Of("lookup", kLookup),   Of("immediate", kImmediate), Of("counter", kCounter),
    Of("redir", kRedir),     Of("nat", kNat),         Of("masq", kMasq),
};

// Attribute types are below 32 in every schema: a mask finds duplicates.
static_assert(NFTA_PAYLOAD_CSUM_FLAGS < 32 && NFTA_BITWISE_DATA < 32, "attribute masks");

const Schema* Find(const std::string& name) {
  for (const Schema& s : kSchemas) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

bool Fail(const char** why, const char* what) {
  *why = what;
  return false;
}

bool IsJumpOrGoto(int32_t code) { return code == NFT_JUMP || code == NFT_GOTO; }

bool PutField(nl::Writer& w, const ExprField& f, const char** why) {
  const FieldSpec& s = *f.spec;
  switch (s.kind) {
    case K::kU32:
      w.PutU32(s.attr, htobe32(static_cast<uint32_t>(f.num)));
      return true;
    case K::kU8:
      w.PutU8(s.attr, static_cast<uint8_t>(f.num));
      return true;
    case K::kU64: {
      uint64_t v = htobe64(f.num);
      w.Put(s.attr, &v, sizeof v);
      return true;
    }
    case K::kString:
      if (f.str.empty() || f.str.size() >= NFT_NAME_MAXLEN || memchr(f.str.data(), 0, f.str.size()) != nullptr) {
        return Fail(why, "expression name field empty, too long or holding a NUL byte");
      }
      w.PutString(s.attr, f.str);
      return true;
    case K::kData: {
      if (f.bytes.empty() || f.bytes.size() > NFT_DATA_VALUE_MAXLEN) return Fail(why, "expression data not 1..64 bytes");
      size_t nest = w.BeginNest(s.attr);
      w.Put(NFTA_DATA_VALUE, f.bytes.data(), f.bytes.size());
      w.EndNest(nest);
      return true;
    }
    case K::kVerdict: {
      int32_t code = static_cast<int32_t>(static_cast<uint32_t>(f.num));
      if (IsJumpOrGoto(code) != f.hasChain) return Fail(why, "a verdict names a chain exactly when it is jump or goto");
      if (f.hasChain && (f.str.empty() || f.str.size() >= NFT_NAME_MAXLEN || memchr(f.str.data(), 0, f.str.size()))) {
        return Fail(why, "verdict chain empty, too long or holding a NUL byte");
      }
      size_t nest = w.BeginNest(s.attr);
      size_t verdict = w.BeginNest(NFTA_DATA_VERDICT);
      w.PutU32(NFTA_VERDICT_CODE, htobe32(static_cast<uint32_t>(code)));
      if (f.hasChain) w.PutString(NFTA_VERDICT_CHAIN, f.str);
      w.EndNest(verdict);
      w.EndNest(nest);
      return true;
    }
    case K::kPad:
      return true;
  }
  return Fail(why, "unknown field kind");
}

// A verdict nest: code, and the chain of a jump / goto. False when it is
// not one podnet reads (then the expression stays raw).
bool GetVerdict(const nl::Attr& a, ExprField* f) {
  nl::Attr v[NFTA_VERDICT_MAX + 1];
  if (!nl::ParseAttrs(a.data, a.len, v, NFTA_VERDICT_MAX)) return false;
  uint32_t code = 0;
  if (!v[NFTA_VERDICT_CODE].present() || !nl::GetBe32(v[NFTA_VERDICT_CODE], &code)) return false;
  f->num = code;
  if (v[NFTA_VERDICT_CHAIN].present()) {
    if (!nl::GetString(v[NFTA_VERDICT_CHAIN], &f->str) || f->str.empty() || f->str.size() >= NFT_NAME_MAXLEN) return false;
    f->hasChain = true;
  }
  if (v[NFTA_VERDICT_CHAIN_ID].present()) return false;
  return IsJumpOrGoto(static_cast<int32_t>(code)) == f->hasChain;
}

// The schema's field on this attribute of this kind, or nullptr.
const FieldSpec* SpecOf(const Schema& schema, uint16_t attr, FieldKind kind) {
  for (size_t i = 0; i < schema.count; i++) {
    if (schema.fields[i].attr == attr && schema.fields[i].kind == kind) return &schema.fields[i];
  }
  return nullptr;
}

// One attribute of a known expression. False: not in the schema, or not
// the size or shape the schema says; the caller keeps the expression raw.
bool GetField(const Schema& schema, const nl::Attr& a, ExprField* f) {
  for (size_t i = 0; i < schema.count; i++) {
    const FieldSpec& s = schema.fields[i];
    if (s.attr != a.type) continue;
    f->spec = &s;
    switch (s.kind) {
      case K::kU32: {
        uint32_t v;
        if (!nl::GetBe32(a, &v)) return false;
        f->num = v;
        return true;
      }
      case K::kU8:
        if (a.len != 1) return false;
        f->num = a.data[0];
        return true;
      case K::kU64:
        return nl::GetBe64(a, &f->num);
      case K::kString:
        return nl::GetString(a, &f->str) && !f->str.empty() && f->str.size() < NFT_NAME_MAXLEN;
      case K::kPad:
        return true;
      case K::kData:
      case K::kVerdict: {
        // One attribute, two fields: which one its nest holds decides.
        nl::Attr d[NFTA_DATA_MAX + 1];
        if (!nl::ParseAttrs(a.data, a.len, d, NFTA_DATA_MAX)) return false;
        const nl::Attr& v = d[NFTA_DATA_VALUE];
        bool value = v.present();
        if (value == d[NFTA_DATA_VERDICT].present()) return false;
        f->spec = SpecOf(schema, a.type, value ? K::kData : K::kVerdict);
        if (f->spec == nullptr) return false;
        if (!value) return GetVerdict(d[NFTA_DATA_VERDICT], f);
        if (v.len == 0 || v.len > NFT_DATA_VALUE_MAXLEN) return false;
        f->bytes.assign(v.data, v.data + v.len);
        return true;
      }
    }
    return false;
  }
  return false;
}

// NFTA_EXPR_DATA of a known expression; false when any of it is not what
// the schema expects.
bool DecodeFields(const Schema& schema, const uint8_t* data, size_t len, std::vector<ExprField>* out) {
  nl::AttrIter it(data, len);
  nl::Attr a;
  uint32_t seen = 0;
  while (it.Next(&a)) {
    if (a.type >= 32 || (seen & (1u << a.type)) != 0) return false;
    seen |= 1u << a.type;
    ExprField f;
    if (!GetField(schema, a, &f)) return false;
    if (f.spec->kind != K::kPad) out->push_back(std::move(f));
  }
  return !it.error();
}

const ExprField* FieldOf(const std::vector<ExprField>& fields, const char* key) {
  for (const ExprField& f : fields) {
    if (strcmp(f.spec->key, key) == 0) return &f;
  }
  return nullptr;
}

bool Only(const std::vector<ExprField>& fields, std::initializer_list<const char*> keys) {
  for (const ExprField& f : fields) {
    bool listed = false;
    for (const char* k : keys) listed = listed || strcmp(f.spec->key, k) == 0;
    if (!listed) return false;
  }
  return true;
}

// Whether podnet's rule AST (lib/nftables/expr-types.ts) holds a decoded
// expression: its fields are ones the AST has, the ones it needs are there,
// and every number the AST names is one it has a name for. Any other form (a
// payload write or checksum, a map lookup, a shift, a ct direction on a set)
// is listed raw, so lib/nftables only names what it gets and the rule is sent
// back byte for byte.
bool Modelled(const std::string& name, const std::vector<ExprField>& f) {
  auto has = [&](const char* key) { return FieldOf(f, key) != nullptr; };
  auto num = [&](const char* key) { return FieldOf(f, key)->num; };
  auto all = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys) {
      if (!has(k)) return false;
    }
    return true;
  };
  if (name == "payload") {
    return Only(f, {"dreg", "base", "offset", "len"}) && all({"dreg", "base", "offset", "len"}) &&
           num("base") <= NFT_PAYLOAD_INNER_HEADER;
  }
  if (name == "meta") return Only(f, {"key", "dreg", "sreg"}) && has("key") && has("dreg") != has("sreg");
  if (name == "ct") {
    return Only(f, {"key", "dreg", "sreg", "direction"}) && has("key") && has("dreg") != has("sreg") &&
           (!has("direction") || (has("dreg") && num("direction") <= 1));
  }
  if (name == "cmp") return Only(f, {"sreg", "op", "data"}) && all({"sreg", "op", "data"}) && num("op") <= NFT_CMP_GTE;
  if (name == "bitwise") {
    return Only(f, {"sreg", "dreg", "op", "len", "mask", "xor"}) && all({"sreg", "dreg", "len", "mask", "xor"}) &&
           (!has("op") || num("op") == NFT_BITWISE_BOOL);
  }
  if (name == "lookup") {
    return Only(f, {"sreg", "set", "setId", "flags"}) && all({"sreg", "set"}) &&
           (!has("flags") || (num("flags") & ~static_cast<uint64_t>(NFT_LOOKUP_F_INV)) == 0);
  }
  if (name == "immediate") {
    if (!has("verdict")) return Only(f, {"dreg", "data"}) && all({"dreg", "data"});
    int32_t code = static_cast<int32_t>(static_cast<uint32_t>(num("verdict")));
    bool named = code == NF_DROP || code == NF_ACCEPT || code == NFT_CONTINUE || code == NFT_JUMP ||
                 code == NFT_GOTO || code == NFT_RETURN;
    return Only(f, {"dreg", "verdict"}) && has("dreg") && num("dreg") == NFT_REG_VERDICT && named;
  }
  if (name == "counter") return Only(f, {"bytes", "packets"});
  if (name == "redir" || name == "masq") return Only(f, {"regProtoMin", "regProtoMax", "flags"});
  if (name == "nat") {
    return Only(f, {"type", "family", "regAddrMin", "regAddrMax", "regProtoMin", "regProtoMax", "flags"}) &&
           all({"type", "family"}) && num("type") <= NFT_NAT_DNAT && (num("family") == NFPROTO_IPV4 || num("family") == NFPROTO_IPV6);
  }
  return false;
}

bool DecodeExpr(const nl::Attr& item, Expr* out, const char** why) {
  nl::Attr e[NFTA_EXPR_MAX + 1];
  if (!nl::ParseAttrs(item.data, item.len, e, NFTA_EXPR_MAX)) return Fail(why, "truncated expression");
  if (!e[NFTA_EXPR_NAME].present() || !nl::GetString(e[NFTA_EXPR_NAME], &out->name) || out->name.empty() ||
      out->name.size() >= NFT_NAME_MAXLEN) {
    return Fail(why, "expression without NFTA_EXPR_NAME");
  }
  const nl::Attr& d = e[NFTA_EXPR_DATA];
  const uint8_t* data = d.present() ? d.data : nullptr;
  size_t len = d.present() ? d.len : 0;
  if (data != nullptr) out->data.assign(data, data + len);
  const Schema* schema = Find(out->name);
  if (schema != nullptr && DecodeFields(*schema, data, len, &out->fields) && Modelled(out->name, out->fields)) return true;
  out->fields.clear();
  out->raw = true;
  return true;
}

}  // namespace

const FieldSpec* ExprSchema(const std::string& name, size_t* count) {
  const Schema* s = Find(name);
  if (s == nullptr) return nullptr;
  *count = s->count;
  return s->fields;
}

const FieldSpec* FindField(const std::string& name, const char* key) {
  const Schema* s = Find(name);
  if (s == nullptr) return nullptr;
  for (size_t i = 0; i < s->count; i++) {
    if (strcmp(s->fields[i].key, key) == 0) return &s->fields[i];
  }
  return nullptr;
}

bool EncodeExprs(nl::Writer& w, uint16_t attr, const std::vector<Expr>& exprs, const char** why) {
  if (exprs.size() > kRuleExprsMax) return Fail(why, "more than 128 expressions in a rule");
  size_t list = w.BeginNest(attr);
  for (const Expr& x : exprs) {
    if (x.name.empty() || x.name.size() >= NFT_NAME_MAXLEN || memchr(x.name.data(), 0, x.name.size()) != nullptr) {
      return Fail(why, "expression name empty, too long or holding a NUL byte");
    }
    if (!x.raw && Find(x.name) == nullptr) return Fail(why, "expression podnet does not encode (and not raw)");
    size_t item = w.BeginNest(NFTA_LIST_ELEM);
    w.PutString(NFTA_EXPR_NAME, x.name);
    if (x.raw) {
      if (x.data.size() > 0xffff - nl::kNlaHeader) return Fail(why, "raw expression data past 64 KiB");
      // The data nest as it was listed: its attributes copied whole.
      size_t data = w.BeginNest(NFTA_EXPR_DATA);
      if (!x.data.empty()) {
        size_t padded = nl::Align4(x.data.size());
        uint8_t* at = w.Append(padded);
        memcpy(at, x.data.data(), x.data.size());
        memset(at + x.data.size(), 0, padded - x.data.size());
      }
      w.EndNest(data);
    } else {
      size_t data = w.BeginNest(NFTA_EXPR_DATA);
      for (const ExprField& f : x.fields) {
        if (f.spec == nullptr) return Fail(why, "expression field without a schema");
        if (!PutField(w, f, why)) return false;
      }
      w.EndNest(data);
    }
    if (!w.EndNest(item)) return Fail(why, "expression past 64 KiB");
  }
  if (!w.EndNest(list)) return Fail(why, "rule expressions past 64 KiB");
  return true;
}

bool DecodeExprs(const uint8_t* data, size_t len, std::vector<Expr>* out, const char** why) {
  nl::AttrIter it(data, len);
  nl::Attr item;
  while (it.Next(&item)) {
    if (item.type != NFTA_LIST_ELEM) return Fail(why, "NFTA_RULE_EXPRESSIONS holds a non-element");
    Expr x;
    if (!DecodeExpr(item, &x, why)) return false;
    out->push_back(std::move(x));
  }
  if (it.error()) return Fail(why, "truncated NFTA_RULE_EXPRESSIONS");
  return true;
}

}  // namespace podnet::nft
