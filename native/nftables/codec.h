// The nf_tables codec: batches of table, chain, set and element changes
// encoded onto a netlink Writer, dump requests, and dump messages decoded
// into plain objects. Pure functions over bytes (no sockets, no N-API), so
// the fuzz target and the session share them. Every decoder is given the
// payload after the nlmsghdr and checks every length it reads: a short
// nfgenmsg, a truncated attribute or a known attribute of the wrong size is a
// malformed message, never a silent stop. User data (comments) is opaque to
// the kernel: a malformed TLV there means "no comment", not a broken listing.
// The decoders hand lib/nftables finished fields: everything podnet reads of
// a dump is decoded here, once, and what it does not read stays raw.
#pragma once

#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "netlink/attr.h"
#include "netlink/engine.h"
#include "nftables/objects.h"

namespace podnet::nft {

constexpr uint16_t MsgType(uint8_t msg) { return static_cast<uint16_t>((NFNL_SUBSYS_NFTABLES << 8) | msg); }

// Longest name the kernel takes (NLA_STRING of NFT_NAME_MAXLEN - 1 bytes).
constexpr size_t kNameMax = NFT_NAME_MAXLEN - 1;
// nft refuses longer comments (libnftnl's NFTNL_UDATA_COMMENT_MAXLEN), and
// its TLV length byte must also hold the NUL.
constexpr size_t kCommentMax = 128;
// libnftnl's user data record types that podnet writes and reads.
constexpr uint8_t kUdataTableComment = 0;
constexpr uint8_t kUdataChainComment = 0;
constexpr uint8_t kUdataRuleComment = 0;
constexpr uint8_t kUdataElemComment = 0;
constexpr uint8_t kUdataSetKeyByteorder = 0;
constexpr uint8_t kUdataSetComment = 7;
// nft's datatype ids for set keys, and its BYTEORDER_BIG_ENDIAN.
constexpr uint32_t kTypeIpv4Addr = 7;
constexpr uint32_t kTypeIpv6Addr = 8;
constexpr uint32_t kByteorderBigEndian = 2;
// An element nest is closed and a new NEWSETELEM begun before it reaches
// this size: a nest's nla_len is 16 bits.
constexpr size_t kElementsNestMax = 60000;

// Where one message of an encoded batch came from: the op, and for element
// ops the elements it carries, so an error names the object that caused it.
struct BatchMessage {
  uint32_t op = 0;
  uint32_t firstElement = 0;
  uint32_t elementCount = 0;
  size_t offset = 0;  // of the message in the Writer, for its seq
};

// Encodes BATCH_BEGIN, one or more messages per op, BATCH_END. Every message
// asks NLM_F_ACK, the batch header too (the kernel then acknowledges it first,
// and a refusal of the whole batch comes as its error). Seqs are given by
// SetBatchSeqs once the number of messages is known (and AskOneAck then
// leaves the ACK on the last). False with *why on an op
// the codec cannot encode (an element op without elements, a name too long).
// genId non-zero goes in BEGIN as NFNL_BATCH_GENID: the kernel then refuses
// the whole batch with ERESTART unless the ruleset is still at that
// generation (0 is what the kernel reads as "do not check", and never hands out).
bool EncodeBatch(nl::Writer& w, const std::vector<Op>& ops, std::vector<BatchMessage>* messages, size_t* beginOffset,
                 size_t* endOffset, const char** why, uint32_t genId = 0);
// Writes seqs first (BEGIN), first+1.. (the messages), then END's.
void SetBatchSeqs(nl::Writer& w, uint32_t first, size_t beginOffset, const std::vector<BatchMessage>& messages,
                  size_t endOffset);

// Leaves NLM_F_ACK on the last message only (BEGIN's, for a batch without
// messages). The kernel answers every refused message whatever its flags, and
// the last one's ACK comes after them all, so one reply ends a batch that went
// through instead of one per message (a pod's batch: 37 replies to read).
void AskOneAck(nl::Writer& w, size_t beginOffset, const std::vector<BatchMessage>& messages);

// Dump requests. table/set empty: all of the family (family NFPROTO_UNSPEC: all families).
void EncodeGetTables(nl::Writer& w, uint32_t seq, uint8_t family);
void EncodeGetChains(nl::Writer& w, uint32_t seq, uint8_t family, const std::string& table);
void EncodeGetSets(nl::Writer& w, uint32_t seq, uint8_t family, const std::string& table);
void EncodeGetRules(nl::Writer& w, uint32_t seq, uint8_t family, const std::string& table);
void EncodeGetElements(nl::Writer& w, uint32_t seq, uint8_t family, const std::string& table, const std::string& set);
// GETSET of one set (not a dump): answered with it, or ENOENT (no such table or set).
void EncodeGetSet(nl::Writer& w, uint32_t seq, uint8_t family, const std::string& table, const std::string& set);
// GETSETELEM of one element (not a dump): answered with it, or ENOENT.
void EncodeGetElement(nl::Writer& w, uint32_t seq, uint8_t family, const std::string& table, const std::string& set,
                      const std::vector<uint8_t>& key);

// GETGEN (not a dump, acked): answered with one NEWGEN, whatever the family.
void EncodeGetGen(nl::Writer& w, uint32_t seq);

// Decoders: false on malformed input, with *why naming what was wrong.
bool DecodeTable(const uint8_t* payload, size_t len, Table* out, const char** why);
bool DecodeChain(const uint8_t* payload, size_t len, Chain* out, const char** why);
bool DecodeSet(const uint8_t* payload, size_t len, Set* out, const char** why);
bool DecodeRule(const uint8_t* payload, size_t len, Rule* out, const char** why);
// One NEWSETELEM message: its set and its elements, appended to *out.
bool DecodeElements(const uint8_t* payload, size_t len, uint8_t* family, std::string* table, std::string* set,
                    std::vector<Element>* out, const char** why);

// One NEWGEN message: its NFTA_GEN_ID. False when the attribute is missing,
// not 4 bytes, or 0 (no kernel hands out 0, and a batch carrying 0 is not
// checked: taking it would turn the check off unseen).
bool DecodeGen(const uint8_t* payload, size_t len, uint32_t* genId, const char** why);

// The value of the first user data record of the given type when it is a
// NUL-terminated string; false when there is none or the TLVs are malformed.
bool UdataString(const uint8_t* data, size_t len, uint8_t type, std::string* out);

}  // namespace podnet::nft
