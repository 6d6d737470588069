// nf_tables rule expressions: the list in NFTA_RULE_EXPRESSIONS encoded from
// and decoded into plain data. One schema table names, for every expression
// podnet knows, its attributes in the order nft (libnftnl) writes them, so
// encode and decode cannot drift apart and the bytes match `nft --debug=mnl`.
// An expression of another name, with an attribute or size the schema does
// not expect (a newer kernel's), or in a form lib/nftables' rule AST does not
// hold, is kept raw, its NFTA_EXPR_DATA whole: it never breaks a listing and
// is sent back byte for byte.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "netlink/attr.h"

namespace podnet::nft {

// The longest rule the kernel takes (NFT_RULE_MAXEXPRS).
constexpr size_t kRuleExprsMax = 128;

enum class FieldKind : uint8_t {
  kU32,      // big-endian 32 bits
  kU8,       // one byte (ct direction)
  kU64,      // big-endian 64 bits (counters)
  kString,   // NUL-terminated name (a set)
  kData,     // NFTA_DATA_VALUE in a nest, 1..64 bytes
  kVerdict,  // NFTA_DATA_VERDICT: code (int32) and, for jump / goto, a chain
  kPad,      // NFTA_*_PAD: alignment only, skipped
};

struct FieldSpec {
  uint16_t attr;
  const char* key;  // the field's name on the JS side
  FieldKind kind;
};

// One decoded attribute. num: kU32 / kU8 / kU64, and the verdict code
// (int32 bits) for kVerdict; bytes: kData; str: kString, a verdict's chain.
struct ExprField {
  const FieldSpec* spec = nullptr;
  uint64_t num = 0;
  std::vector<uint8_t> bytes;
  std::string str;
  bool hasChain = false;  // kVerdict
};

struct Expr {
  std::string name;
  // A raw expression is encoded from data, its NFTA_EXPR_DATA payload; a
  // decoded one from its fields (as listed it has data too, which only raw
  // ones hand on to JS).
  bool raw = false;
  std::vector<ExprField> fields;  // in schema order when encoding, wire order when decoded
  std::vector<uint8_t> data;
};

// The schema of an expression name, or nullptr when podnet does not decode it.
// *count is the number of fields.
const FieldSpec* ExprSchema(const std::string& name, size_t* count);
// The field of that schema with that JS name, or nullptr.
const FieldSpec* FindField(const std::string& name, const char* key);

// Writes NFTA_RULE_EXPRESSIONS with every expression; false with *why when
// one cannot be encoded (an unknown name that is not raw, a value of the
// wrong size, a verdict jump without a chain, the nest past 64 KiB).
bool EncodeExprs(nl::Writer& w, uint16_t attr, const std::vector<Expr>& exprs, const char** why);
// Decodes the payload of NFTA_RULE_EXPRESSIONS; false with *why on a broken
// list (a truncated attribute, an item that is not NFTA_LIST_ELEM, an
// expression without a name).
bool DecodeExprs(const uint8_t* data, size_t len, std::vector<Expr>* out, const char** why);

}  // namespace podnet::nft
