// The nf_tables objects podnet reads and writes, as plain data: what a dump
// message decodes into and what a batch message is encoded from. Names are
// the kernel's (NUL-free, < NFT_NAME_MAXLEN bytes); keys are raw bytes in
// network order. Attributes podnet does not decode are kept raw, so a newer
// kernel's additions, or a family podnet does not know, never break a listing;
// the ones it decodes (user data holding only records podnet knows, a map's
// data type and length, an element's data) are not kept a second time.
#pragma once

#include <stdint.h>

#include <string>
#include <vector>

#include "nftables/element_records.h"
#include "nftables/expr.h"

namespace podnet::nft {

struct RawAttr {
  uint16_t type = 0;  // nested / byte-order flags masked off
  std::vector<uint8_t> data;
};

struct Table {
  uint8_t family = 0;
  std::string name;
  uint32_t flags = 0;
  uint32_t use = 0;
  bool hasHandle = false;
  uint64_t handle = 0;
  std::string comment;  // NFTNL_UDATA_TABLE_COMMENT
  std::vector<RawAttr> unknown;
};

struct Chain {
  uint8_t family = 0;
  std::string table;
  std::string name;
  bool hasHandle = false;
  uint64_t handle = 0;
  // A base chain: hook, priority and type are set, policy when hasPolicy.
  bool hasHook = false;
  uint32_t hook = 0;  // NF_INET_*
  int32_t priority = 0;
  std::string type;  // "filter", "nat", "route"
  bool hasPolicy = false;
  uint32_t policy = 0;  // NF_DROP 0, NF_ACCEPT 1
  uint32_t flags = 0;
  uint32_t use = 0;
  std::string comment;  // NFTNL_UDATA_CHAIN_COMMENT
  std::vector<RawAttr> unknown;
};

struct Set {
  uint8_t family = 0;
  std::string table;
  std::string name;
  uint32_t flags = 0;  // NFT_SET_*
  uint32_t keyType = 0;  // nft's datatype id: 7 ipv4_addr, 8 ipv6_addr
  uint32_t keyLen = 0;
  uint32_t size = 0;  // NFTA_SET_DESC_SIZE: the most elements it holds, 0 for no limit
  bool hasHandle = false;
  uint64_t handle = 0;
  uint32_t id = 0;  // batch-local NFTA_SET_ID (encoding only)
  std::string comment;  // NFTNL_UDATA_SET_COMMENT
  // A map (NFT_SET_MAP with NFTA_SET_DATA_TYPE and _LEN, decoding only):
  // its data's type (nft's datatype id, NFT_DATA_VERDICT) and length.
  bool isMap = false;
  uint32_t dataType = 0;
  uint32_t dataLen = 0;
  std::vector<RawAttr> unknown;
};

// A map element's NFTA_SET_ELEM_DATA in the forms podnet decodes: a value,
// or a verdict (code, and the chain of a jump / goto).
struct ElementData {
  bool verdict = false;
  std::vector<uint8_t> value;
  int32_t code = 0;
  std::string chain;
};

struct Element {
  std::vector<uint8_t> key;
  uint32_t flags = 0;  // NFT_SET_ELEM_*
  bool hasComment = false;
  std::string comment;  // NFTNL_UDATA_SET_ELEM_COMMENT
  bool hasData = false;
  ElementData data;
  std::vector<RawAttr> unknown;
};

// A rule: where it is, its handle and comment, its expressions decoded (the
// ones podnet does not know kept raw inside the list).
struct Rule {
  uint8_t family = 0;
  std::string table;
  std::string chain;
  bool hasHandle = false;
  uint64_t handle = 0;
  bool hasPosition = false;
  uint64_t position = 0;
  std::string comment;  // NFTNL_UDATA_RULE_COMMENT
  bool hasComment = false;
  std::vector<Expr> exprs;
  std::vector<RawAttr> unknown;
};

// One change of a batch: NFT_MSG_NEW* / DEL* of one object kind, with the
// netlink flags it is sent with (NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE).
struct Op {
  // kRule: NEWRULE (appended with NLM_F_APPEND, else inserted; before or
  // after rule.position when hasPosition), or DELRULE of rule.handle, or of
  // the whole chain (flush chain) without a handle.
  enum Kind : uint8_t { kTable, kChain, kSet, kElements, kFlushTable, kRule } kind = kTable;
  bool del = false;
  uint16_t flags = 0;
  Table table;      // kTable, kFlushTable (family and name)
  Chain chain;      // kChain
  Set set;          // kSet; kElements: family, table and name of the set
  ElementRecords elements;  // kElements
  Rule rule;        // kRule
};

}  // namespace podnet::nft
