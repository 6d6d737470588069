#include "nftables/session.h"

#include <errno.h>
#include <linux/netlink.h>
#include <string.h>

#include <string_view>
#include <unordered_set>

#include "netlink/dump_result.h"
#include "netlink/session_lock.h"
#include "nftables/codec.h"

namespace podnet::nft {

// The kernel answers a batch it refuses as a whole (no CAP_NET_ADMIN, a bad
// header) with one error for BATCH_BEGIN and nothing for the messages: not
// even the last one's ACK, which the engine would wait for until its
// deadline. While a batch is out, this wrapper answers that message with the
// same error, right after it.
class Session::BatchGuard final : public nl::Transport {
 public:
  explicit BatchGuard(std::unique_ptr<nl::Transport> inner) : inner_(std::move(inner)) {}

  void Arm(uint32_t beginSeq, uint32_t messages) {
    armed_ = true;
    beginSeq_ = beginSeq;
    lastSeq_ = beginSeq + messages;
  }
  void Disarm() { armed_ = false; }

  ErrorInfo Send(const uint8_t* data, size_t len) override { return inner_->Send(data, len); }
  void Drain() override { inner_->Drain(); }
  bool NeedsJsThread() const override { return inner_->NeedsJsThread(); }
  nl::DeferredSocket* Deferred() override { return inner_->Deferred(); }

  ErrorInfo Recv(nl::RxBuffer* buf, size_t* len, int timeoutMs) override {
    ErrorInfo err = inner_->Recv(buf, len, timeoutMs);
    if (err.failed() || !armed_) return err;
    int32_t code = 0;
    if (!RefusedBatch(buf->data(), *len, &code)) return err;
    armed_ = false;
    // A batch without messages ends with BEGIN's own reply.
    if (lastSeq_ == beginSeq_) return err;
    size_t at = nl::Align4(*len);
    size_t one = sizeof(nlmsghdr) + sizeof(int32_t);
    if (buf->size() < at + one) buf->resize(at + one);
    memset(buf->data() + *len, 0, at - *len);
    nlmsghdr hdr{};
    hdr.nlmsg_len = static_cast<uint32_t>(one);
    hdr.nlmsg_type = NLMSG_ERROR;
    hdr.nlmsg_flags = NLM_F_CAPPED;
    hdr.nlmsg_seq = lastSeq_;
    memcpy(buf->data() + at, &hdr, sizeof hdr);
    memcpy(buf->data() + at + sizeof hdr, &code, sizeof code);
    *len = at + one;
    return err;
  }

 private:
  // Whether the datagram holds an error (not an ACK) for BATCH_BEGIN. Only
  // well-formed headers are looked at; the engine judges the rest.
  bool RefusedBatch(const uint8_t* p, size_t len, int32_t* code) const {
    size_t off = 0;
    while (off + sizeof(nlmsghdr) <= len) {
      nlmsghdr hdr;
      memcpy(&hdr, p + off, sizeof hdr);
      if (hdr.nlmsg_len < sizeof(nlmsghdr) || hdr.nlmsg_len > len - off) return false;
      if (hdr.nlmsg_type == NLMSG_ERROR && hdr.nlmsg_seq == beginSeq_ &&
          hdr.nlmsg_len >= sizeof(nlmsghdr) + sizeof(int32_t)) {
        memcpy(code, p + off + sizeof(nlmsghdr), sizeof *code);
        if (*code != 0) return true;
      }
      off += nl::Align4(hdr.nlmsg_len);
    }
    return false;
  }

  std::unique_ptr<nl::Transport> inner_;
  bool armed_ = false;
  uint32_t beginSeq_ = 0;
  uint32_t lastSeq_ = 0;
};

Session::Session(std::unique_ptr<nl::Transport> transport, int timeoutMs, bool primeDumps)
    : primeDumps_(primeDumps),
      guard_(new BatchGuard(std::move(transport))),
      engine_(std::unique_ptr<nl::Transport>(guard_), timeoutMs) {}

// The extended ACK's NLMSGERR_ATTR_OFFS: where in the refused message the
// kernel's complaint points, as a byte offset from its nlmsghdr. The TLVs
// follow the echoed header, or the whole echoed message when not capped.
static bool RefusedOffset(const nl::Ack& ack, uint32_t* offset) {
  if (!(ack.flags & NLM_F_ACK_TLVS) || ack.echo == nullptr || ack.echoLen < sizeof(nlmsghdr)) return false;
  nlmsghdr echoed;
  memcpy(&echoed, ack.echo, sizeof echoed);
  size_t at = (ack.flags & NLM_F_CAPPED) ? sizeof(nlmsghdr) : nl::Align4(echoed.nlmsg_len);
  while (at + sizeof(nlattr) <= ack.echoLen) {
    nlattr a;
    memcpy(&a, ack.echo + at, sizeof a);
    if (a.nla_len < sizeof(nlattr) || a.nla_len > ack.echoLen - at) return false;
    if ((a.nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_OFFS && a.nla_len >= sizeof(nlattr) + sizeof(uint32_t)) {
      memcpy(offset, ack.echo + at + sizeof(nlattr), sizeof *offset);
      return true;
    }
    at += nl::Align4(a.nla_len);
  }
  return false;
}

// Which element of an element message (as podnet sent it) holds the byte at
// offset: the kernel points at the NFTA_LIST_ELEM it refused (or inside it).
static bool ElementAt(const uint8_t* msg, size_t len, uint32_t offset, uint32_t* index) {
  auto walk = [&](size_t from, size_t to, auto&& visit) {
    while (from + sizeof(nlattr) <= to) {
      nlattr a;
      memcpy(&a, msg + from, sizeof a);
      if (a.nla_len < sizeof(nlattr) || a.nla_len > to - from) return;
      if (!visit(a, from)) return;
      from += nl::Align4(a.nla_len);
    }
  };
  bool found = false;
  walk(sizeof(nlmsghdr) + 4, len, [&](const nlattr& list, size_t at) {
    if ((list.nla_type & NLA_TYPE_MASK) != NFTA_SET_ELEM_LIST_ELEMENTS) return true;
    uint32_t i = 0;
    walk(at + sizeof(nlattr), at + list.nla_len, [&](const nlattr& elem, size_t e) {
      if (offset >= e && offset < e + elem.nla_len) {
        *index = i;
        found = true;
        return false;
      }
      i++;
      return true;
    });
    return false;
  });
  return found;
}

static ErrorInfo Malformed(const char* what, const char* why) {
  ErrorInfo err = SystemError(EBADMSG, "recv");
  err.message = std::string("malformed nf_tables reply (") + what + "): " + why;
  return err;
}

static ErrorInfo KernelError(int error, const char* command) {
  ErrorInfo info;
  info.kind = "nftables";
  info.err = error;
  info.syscall = "sendmsg";
  info.With("command", command);
  return info;
}

ErrorInfo Session::Lock(std::unique_lock<std::mutex>* lock) {
  return nl::LockSession(mu_, engine_.transport(), "ERR_NFTABLES_REENTERED", "nftables", lock);
}

ErrorInfo Session::Run(const std::vector<Op>& ops, uint32_t genId) {
  w_.Clear();
  std::vector<BatchMessage> messages;
  size_t begin = 0, end = 0;
  const char* why = "";
  if (!EncodeBatch(w_, ops, &messages, &begin, &end, &why, genId)) {
    ErrorInfo err = SystemError(EINVAL, "sendmsg");
    err.code = "ERR_NFTABLES_ENCODE";
    err.message = std::string("nftables batch cannot be encoded: ") + why;
    return err;
  }
  if (w_.size() > kBatchMax) {
    ErrorInfo err = SystemError(EMSGSIZE, "sendmsg");
    err.code = "ERR_NFTABLES_BATCH_TOO_LARGE";
    err.message = "nftables batch of " + std::to_string(w_.size()) + " bytes is over the " +
                  std::to_string(kBatchMax) +
                  " bytes the kernel takes in one transaction; nothing was sent (split it over several transactions)";
    err.With("bytes", std::to_string(w_.size()));
    err.With("limit", std::to_string(kBatchMax));
    return err;
  }
  uint32_t count = static_cast<uint32_t>(messages.size()) + 1;  // BEGIN's refusal refuses the batch
  uint32_t first = engine_.ReserveSeq(count + 1);               // and END has a seq
  SetBatchSeqs(w_, first, begin, messages, end);
  AskOneAck(w_, begin, messages);
  // The first refusal is the cause: the kernel goes on checking the rest of
  // a failed batch, and later errors may only follow from the first.
  uint32_t failed = 0;
  int kerr = 0;
  bool pointed = false;
  uint32_t offset = 0;
  guard_->Arm(first, count - 1);
  ErrorInfo err = engine_.ExchangeToLast(w_.data(), w_.size(), first, count, [&](const nl::Ack& ack) {
    if (ack.error == 0) return;
    if (kerr == 0 || ack.index < failed) {
      failed = ack.index;
      kerr = ack.error;
      pointed = RefusedOffset(ack, &offset);
    }
  });
  guard_->Disarm();
  if (err.failed()) return err;
  if (kerr == 0) return ErrorInfo{};
  ErrorInfo info = KernelError(kerr, "run");
  if (failed > 0) {
    const BatchMessage& m = messages[failed - 1];
    info.With("index", std::to_string(m.op));
    if (ops[m.op].kind == Op::kElements) {
      // The element the kernel pointed at, else the first of the message (a
      // kernel without extended ACKs, or a refusal of the message itself).
      uint32_t element = m.firstElement, within = 0;
      nlmsghdr sent;
      memcpy(&sent, w_.data() + m.offset, sizeof sent);
      if (pointed && ElementAt(w_.data() + m.offset, sent.nlmsg_len, offset, &within) && within < m.elementCount) {
        element += within;
      }
      info.With("element", std::to_string(element));
      info.With("elementCount", std::to_string(m.elementCount));
    }
  }
  return info;
}

template <typename Fn>
ErrorInfo Session::DumpAll(const char* what, const std::function<void(uint32_t seq)>& encode, Fn&& onMessage,
                           const std::function<void()>& reset, const std::function<bool()>& consistent) {
  ErrorInfo primed = PrimeDumps();
  if (primed.failed()) return primed;
  int kerr = 0;
  ErrorInfo err = engine_.DumpWhole(
      w_, std::string("nf_tables dump of ") + what, encode, reset, &kerr,
      [&](const uint8_t* p, size_t n) -> ErrorInfo {
        const char* why = "";
        if (!onMessage(engine_.message_type(), p, n, &why)) return Malformed(what, why);
        return ErrorInfo{};
      },
      consistent);
  if (err.failed()) return err;
  if (kerr != 0) return KernelError(kerr, what);
  return ErrorInfo{};
}

// A dump's messages of the expected type decoded, others kept raw.
template <typename T, typename Decode>
static auto Collect(uint16_t type, Decode decode, std::vector<T>* out, std::vector<RawMessage>* raw) {
  return [=](uint16_t got, const uint8_t* p, size_t n, const char** why) {
    if (got != type) {
      raw->push_back(RawMessage{got, std::vector<uint8_t>(p, p + n)});
      return true;
    }
    T obj;
    if (!decode(p, n, &obj, why)) return false;
    out->push_back(std::move(obj));
    return true;
  };
}

ErrorInfo Session::Tables(uint8_t family, std::vector<Table>* out, std::vector<RawMessage>* raw) {
  return DumpAll(
      "tables", [&](uint32_t seq) { EncodeGetTables(w_, seq, family); },
      Collect(MsgType(NFT_MSG_NEWTABLE), DecodeTable, out, raw), [&] { out->clear(), raw->clear(); });
}

ErrorInfo Session::Chains(uint8_t family, const std::string& table, std::vector<Chain>* out,
                          std::vector<RawMessage>* raw) {
  return DumpAll(
      "chains", [&](uint32_t seq) { EncodeGetChains(w_, seq, family, table); },
      Collect(MsgType(NFT_MSG_NEWCHAIN), DecodeChain, out, raw), [&] { out->clear(), raw->clear(); });
}

ErrorInfo Session::Sets(uint8_t family, const std::string& table, std::vector<Set>* out, std::vector<RawMessage>* raw) {
  return DumpAll(
      "sets", [&](uint32_t seq) { EncodeGetSets(w_, seq, family, table); },
      Collect(MsgType(NFT_MSG_NEWSET), DecodeSet, out, raw), [&] { out->clear(), raw->clear(); });
}

ErrorInfo Session::Rules(uint8_t family, const std::string& table, std::vector<Rule>* out,
                         std::vector<RawMessage>* raw) {
  return DumpAll(
      "rules", [&](uint32_t seq) { EncodeGetRules(w_, seq, family, table); },
      Collect(MsgType(NFT_MSG_NEWRULE), DecodeRule, out, raw), [&] { out->clear(), raw->clear(); });
}

// Whether no key is listed twice (an interval's end apart from a start with the same key). The kernel dumps a
// set a datagram at a time, each time walking it again and skipping as many elements as it sent before; a hash
// set whose table grew between two of those walks (the kernel resizes it in a worker, after the adds, without a
// new generation) comes out in another order, some elements listed twice and as many not at all, and no
// NLM_F_DUMP_INTR says so. A repeated key is how such a listing shows.
static bool EachKeyOnce(const std::vector<Element>& elements) {
  std::unordered_set<std::string_view> starts, ends;
  starts.reserve(elements.size());
  for (const Element& e : elements) {
    auto& seen = (e.flags & NFT_SET_ELEM_INTERVAL_END) ? ends : starts;
    std::string_view key(reinterpret_cast<const char*>(e.key.data()), e.key.size());
    if (!seen.insert(key).second) return false;
  }
  return true;
}

ErrorInfo Session::Elements(uint8_t family, const std::string& table, const std::string& set,
                            std::vector<Element>* out) {
  return DumpAll(
      "elements", [&](uint32_t seq) { EncodeGetElements(w_, seq, family, table, set); },
      [&](uint16_t got, const uint8_t* p, size_t n, const char** why) {
        if (got != MsgType(NFT_MSG_NEWSETELEM)) return true;
        uint8_t fam = 0;
        std::string t, s;
        return DecodeElements(p, n, &fam, &t, &s, out, why);
      },
      [&] { out->clear(); }, [&] { return EachKeyOnce(*out); });
}

ErrorInfo Session::StartElements(uint8_t family, const std::string& table, const std::string& set) {
  ErrorInfo primed = PrimeDumps();
  if (primed.failed()) return primed;
  w_.Clear();
  cursorSeq_ = engine_.ReserveSeq(1);
  EncodeGetElements(w_, cursorSeq_, family, table, set);
  return engine_.StartDump(w_.data(), w_.size(), cursorSeq_);
}

ErrorInfo Session::NextElements(uint32_t maxElements, std::vector<Element>* out, bool* done) {
  *done = false;
  if (cursorSeq_ == 0) {
    *done = true;
    return ErrorInfo{};
  }
  return nl::EmptyOnFailure([&] { out->clear(); }, [&]() -> ErrorInfo {
    while (!*done && out->size() < maxElements) {
      int kerr = 0;
      ErrorInfo err = engine_.NextDumpDatagram(cursorSeq_, &kerr, done, [&](const uint8_t* p, size_t n) -> ErrorInfo {
        if (engine_.message_type() != MsgType(NFT_MSG_NEWSETELEM)) return ErrorInfo{};
        uint8_t fam = 0;
        std::string t, s;
        const char* why = "";
        if (!DecodeElements(p, n, &fam, &t, &s, out, &why)) return Malformed("elements", why);
        return ErrorInfo{};
      });
      if (err.failed()) {
        cursorSeq_ = 0;
        return err;
      }
      if (kerr != 0) {
        cursorSeq_ = 0;
        return KernelError(kerr, "elements");
      }
    }
    if (!*done) return ErrorInfo{};
    cursorSeq_ = 0;
    if (!engine_.dump_interrupted()) return ErrorInfo{};
    ErrorInfo err = SystemError(EAGAIN, "recv");
    err.message = "nf_tables dump of elements was interrupted by changes: the elements streamed may have missed or repeated some";
    return err;
  });
}

template <typename T, typename Decode>
ErrorInfo Session::GetOne(const char* what, const char* op, uint16_t type, const std::function<void(uint32_t seq)>& encode,
                          Decode&& decode, bool* found, T* out) {
  w_.Clear();
  uint32_t seq = engine_.ReserveSeq(1);
  encode(seq);
  int kerr = 0;
  std::vector<T> got;
  ErrorInfo err = engine_.Exchange(
      w_.data(), w_.size(), seq, 1, [&](const nl::Ack& ack) { kerr = ack.error; },
      [&](const uint8_t* p, size_t n) -> ErrorInfo {
        if (engine_.message_type() != type) return Malformed(what, "a message of another type");
        const char* why = "";
        if (!decode(p, n, &got, &why)) return Malformed(what, why);
        return ErrorInfo{};
      });
  *found = false;
  if (err.failed()) return err;
  if (kerr == ENOENT && !got.empty()) return Malformed(what, "ENOENT after the answer");
  if (kerr == ENOENT) return ErrorInfo{};
  if (kerr != 0) return KernelError(kerr, op);
  if (got.size() != 1) return Malformed(what, "not one object in the answer");
  *found = true;
  *out = std::move(got[0]);
  return ErrorInfo{};
}

ErrorInfo Session::GetGen(uint32_t* genId) {
  bool found = false;
  ErrorInfo err = GetOne(
      "generation", "generation", MsgType(NFT_MSG_NEWGEN), [&](uint32_t seq) { EncodeGetGen(w_, seq); },
      [](const uint8_t* p, size_t n, std::vector<uint32_t>* got, const char** why) {
        uint32_t id = 0;
        if (!DecodeGen(p, n, &id, why)) return false;
        got->push_back(id);
        return true;
      },
      &found, genId);
  if (err.failed()) return err;
  // GETGEN has nothing to miss: ENOENT is no answer of the kernel's.
  if (!found) return KernelError(ENOENT, "generation");
  return ErrorInfo{};
}

ErrorInfo Session::PrimeDumps() {
  if (!primeDumps_ || engine_.answered()) return ErrorInfo{};
  uint32_t genId = 0;
  return GetGen(&genId);
}

ErrorInfo Session::GetSet(uint8_t family, const std::string& table, const std::string& set, bool* found,
                          Set* out) {
  ErrorInfo err = GetOne(
      "set", "getSet", MsgType(NFT_MSG_NEWSET), [&](uint32_t seq) { EncodeGetSet(w_, seq, family, table, set); },
      [](const uint8_t* p, size_t n, std::vector<Set>* got, const char** why) {
        Set s;
        if (!DecodeSet(p, n, &s, why)) return false;
        got->push_back(std::move(s));
        return true;
      },
      found, out);
  if (err.failed() || !*found) return err;
  if (out->name != set || out->table != table) {
    *found = false;
    return Malformed("set", "another set than asked");
  }
  return ErrorInfo{};
}

ErrorInfo Session::GetElement(uint8_t family, const std::string& table, const std::string& set,
                              const std::vector<uint8_t>& key, bool* found, Element* out) {
  ErrorInfo err = GetOne(
      "element", "getElement", MsgType(NFT_MSG_NEWSETELEM),
      [&](uint32_t seq) { EncodeGetElement(w_, seq, family, table, set, key); },
      [](const uint8_t* p, size_t n, std::vector<Element>* got, const char** why) {
        uint8_t fam = 0;
        std::string t, s;
        return DecodeElements(p, n, &fam, &t, &s, got, why);
      },
      found, out);
  if (err.failed() || !*found) return err;
  // The kernel answers with the set's key, and refuses a key of another length (EINVAL).
  if (out->key.size() != key.size()) {
    *found = false;
    return Malformed("element", "a key of another length than asked");
  }
  return ErrorInfo{};
}

}  // namespace podnet::nft
