// nf_tables operations over one netlink engine: batches (one sendmsg, one
// kernel transaction, the first error mapped to the op and element that
// caused it), dumps of tables, chains, sets, rules and a set's elements
// (taken again when the kernel flags them interrupted), and one element's
// lookup. Plain C++ (no N-API): it runs on libuv workers.
#pragma once

#include <stdint.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "netlink/attr.h"
#include "netlink/engine.h"
#include "nftables/objects.h"

namespace podnet::nft {

// The largest batch one sendmsg carries: netlink_sendmsg refuses a datagram
// longer than the socket's sk_sndbuf - 32 with EMSGSIZE, and sk_sndbuf is
// twice what SO_SNDBUF(FORCE) asked for: 2 * 8 MiB (socket_transport.cc).
// Checked before sending, on every transport, so the fake refuses alike.
constexpr size_t kBatchMax = (size_t{16} << 20) - 32;

// A message of a dump podnet does not decode (another type), kept whole.
struct RawMessage {
  uint16_t type = 0;
  std::vector<uint8_t> payload;  // nfgenmsg and attributes
};

class Session {
 public:
  // primeDumps: ask for the generation before the first dump (see GetGen); a
  // kernel socket needs it, a JS peer does not.
  Session(std::unique_ptr<nl::Transport> transport, int timeoutMs, bool primeDumps = false);

  // Takes the session for one operation; refuses re-entry from a JS peer
  // with ERR_NFTABLES_REENTERED (netlink/session_lock.h).
  ErrorInfo Lock(std::unique_lock<std::mutex>* lock);
  nl::Engine& engine() { return engine_; }

  // One batch of ops, all or nothing. A kernel refusal is an "nftables"
  // error naming the op (index), and for element ops the first element of
  // the message (element) that failed; a refusal of the batch as a whole
  // (EPERM, ...) names no op. genId non-zero: the batch carries it
  // (NFNL_BATCH_GENID), and a kernel at another generation refuses it whole
  // with ERESTART, applying nothing.
  ErrorInfo Run(const std::vector<Op>& ops, uint32_t genId = 0);

  // The ruleset generation (NFT_MSG_GETGEN): it moves with every commit in
  // the namespace. Reading its answer is also what makes a fresh socket's
  // dumps whole: the kernel sizes a dump's datagrams by the largest buffer a
  // recvmsg that returned data has offered (capped near 32 KiB), and before
  // any has, the first datagram is NLMSG_GOODSIZE (~3.7 KiB); an object that
  // does not fit ends the dump there, silently. With primeDumps the first
  // dump of a socket that has received nothing yet asks for it first.
  ErrorInfo GetGen(uint32_t* genId);

  ErrorInfo Tables(uint8_t family, std::vector<Table>* out, std::vector<RawMessage>* raw);
  ErrorInfo Chains(uint8_t family, const std::string& table, std::vector<Chain>* out, std::vector<RawMessage>* raw);
  ErrorInfo Sets(uint8_t family, const std::string& table, std::vector<Set>* out, std::vector<RawMessage>* raw);
  ErrorInfo Rules(uint8_t family, const std::string& table, std::vector<Rule>* out, std::vector<RawMessage>* raw);
  ErrorInfo Elements(uint8_t family, const std::string& table, const std::string& set, std::vector<Element>* out);
  // A set's elements a chunk at a time, over this session's socket (which
  // then serves nothing else until the dump is done): StartElements sends
  // the dump, NextElements reads datagrams until it holds at least
  // maxElements or the dump ended (*done). A dump the kernel flagged
  // interrupted ends in EAGAIN, since what was handed on may have missed or
  // repeated elements.
  ErrorInfo StartElements(uint8_t family, const std::string& table, const std::string& set);
  ErrorInfo NextElements(uint32_t maxElements, std::vector<Element>* out, bool* done);
  // *found false (and no error) when the kernel answers ENOENT: no such table or set.
  ErrorInfo GetSet(uint8_t family, const std::string& table, const std::string& set, bool* found, Set* out);
  // *found false (and no error) when the kernel answers ENOENT for the element.
  ErrorInfo GetElement(uint8_t family, const std::string& table, const std::string& set,
                       const std::vector<uint8_t>& key, bool* found, Element* out);

 private:
  // GetOne sends the GET encode writes and takes the one object of `type` that answers it: *found false on ENOENT,
  // any other answer than one object malformed.
  template <typename T, typename Decode>
  ErrorInfo GetOne(const char* what, const char* op, uint16_t type, const std::function<void(uint32_t seq)>& encode,
                   Decode&& decode, bool* found, T* out);
  template <typename Fn>
  ErrorInfo DumpAll(const char* what, const std::function<void(uint32_t seq)>& encode, Fn&& onMessage,
                    const std::function<void()>& reset, const std::function<bool()>& consistent = nullptr);

  // Asks for the generation when primeDumps and nothing was received yet.
  ErrorInfo PrimeDumps();

  class BatchGuard;
  std::mutex mu_;
  const bool primeDumps_;
  uint32_t cursorSeq_ = 0;  // the seq of the element dump StartElements sent (0: none)
  BatchGuard* guard_;  // owned by engine_ (it wraps the transport)
  nl::Engine engine_;
  nl::Writer w_;
};

}  // namespace podnet::nft
