#include "netlink/engine.h"

#include <errno.h>
#include <linux/netlink.h>
#include <string.h>

namespace podnet::nl {

static ErrorInfo Malformed(const char* what) {
  ErrorInfo err = SystemError(EBADMSG, "recv");
  err.message = std::string("malformed netlink reply: ") + what;
  return err;
}

void Engine::DrainBeforeSend() {
  // A JS peer (the one transport driven from the JS thread) queues its whole
  // answer inside Send(): whatever is still queued when the next request goes
  // out answers an earlier one, even after an exchange that completed (a peer
  // may send more than the engine read). Left there, a malformed leftover
  // would fail the next, unrelated request. A socket holds leftovers only
  // after an exchange that ended early, and draining it costs syscalls.
  if (dirty_ || transport_->NeedsJsThread()) transport_->Drain();
}

uint32_t Engine::ReserveSeq(uint32_t count) {
  // Skip 0 so that a zeroed header never matches a live request.
  if (nextSeq_ == 0 || nextSeq_ + count < nextSeq_) nextSeq_ = 1;
  uint32_t first = nextSeq_;
  nextSeq_ += count;
  return first;
}

// Walks the netlink messages of one datagram.
template <typename Fn>
static ErrorInfo ForEachMessage(const RxBuffer& buf, size_t size, Fn&& fn) {
  size_t off = 0;
  while (off + sizeof(nlmsghdr) <= size) {
    nlmsghdr hdr;
    memcpy(&hdr, buf.data() + off, sizeof hdr);
    if (hdr.nlmsg_len < sizeof(nlmsghdr) || hdr.nlmsg_len > size - off) return Malformed("bad nlmsg_len");
    bool stop = false;
    ErrorInfo err = fn(hdr, buf.data() + off, &stop);
    if (err.failed() || stop) return err;
    off += NLMSG_ALIGN(hdr.nlmsg_len);
  }
  if (off < size && size - off >= 4) return Malformed("trailing bytes");
  return ErrorInfo{};
}

// Error codes in NLMSG_ERROR and NLMSG_DONE are 0 or a negated errno; ipset
// and nf_tables put their own codes above 4096 (IPSET_ERR_PRIVATE). Anything
// positive or past 16 bits came from a broken or hostile peer: negating
// INT_MIN is undefined, and a huge code would reach JS as an errno.
constexpr int32_t kMaxReplyError = 0xffff;

static ErrorInfo ReadCode(const uint8_t* at, int* error) {
  int32_t code;
  memcpy(&code, at, sizeof code);
  if (code > 0 || code < -kMaxReplyError) return Malformed("error code out of range");
  *error = -code;
  return ErrorInfo{};
}

static ErrorInfo ReadError(const nlmsghdr& hdr, const uint8_t* msg, int* error, const uint8_t** echo, size_t* echoLen) {
  if (hdr.nlmsg_len < sizeof(nlmsghdr) + sizeof(int32_t)) return Malformed("short NLMSG_ERROR");
  ErrorInfo err = ReadCode(msg + sizeof(nlmsghdr), error);
  if (err.failed()) return err;
  *echo = msg + sizeof(nlmsghdr) + sizeof(int32_t);
  *echoLen = hdr.nlmsg_len - sizeof(nlmsghdr) - sizeof(int32_t);
  return ErrorInfo{};
}

ErrorInfo Engine::Exchange(const uint8_t* bytes, size_t len, uint32_t first, uint32_t count,
                           const std::function<void(const Ack&)>& onAck, const MessageFn& onData) {
  return ExchangeReplies(bytes, len, first, count, false, onAck, onData);
}

ErrorInfo Engine::ExchangeToLast(const uint8_t* bytes, size_t len, uint32_t first, uint32_t count,
                                 const std::function<void(const Ack&)>& onAck) {
  return ExchangeReplies(bytes, len, first, count, true, onAck, nullptr);
}

ErrorInfo Engine::ExchangeReplies(const uint8_t* bytes, size_t len, uint32_t first, uint32_t count, bool toLast,
                                  const std::function<void(const Ack&)>& onAck, const MessageFn& onData) {
  DrainBeforeSend();
  dirty_ = true;  // until every reply is in
  ErrorInfo err = transport_->Send(bytes, len);
  if (err.failed()) return err;
  // Which requests have their reply. Most exchanges carry one request: a
  // word of bits needs no allocation on the single-add hot path.
  uint64_t seenBits = 0;
  std::vector<bool> seenMany(count > 64 ? count : 0, false);
  auto seen = [&](uint32_t i) { return count <= 64 ? ((seenBits >> i) & 1) != 0 : static_cast<bool>(seenMany[i]); };
  auto markSeen = [&](uint32_t i) {
    if (count <= 64) {
      seenBits |= uint64_t{1} << i;
    } else {
      seenMany[i] = true;
    }
  };
  uint32_t pending = count;
  // The deadline is per silence (timeoutMs_ for each datagram), not per batch size.
  while (pending > 0) {
    err = transport_->Recv(&rx_, &rxLen_, timeoutMs_);
    if (err.failed()) {
      if (err.err == ENOBUFS) transport_->Drain();
      return err;
    }
    err = ForEachMessage(rx_, rxLen_, [&](const nlmsghdr& hdr, const uint8_t* msg, bool*) -> ErrorInfo {
      uint32_t index = hdr.nlmsg_seq - first;
      if (hdr.nlmsg_seq < first || index >= count || seen(index)) return ErrorInfo{};  // stale or foreign
      if (hdr.nlmsg_type != NLMSG_ERROR) {
        messageType_ = hdr.nlmsg_type;
        if (onData) return onData(msg + sizeof(nlmsghdr), hdr.nlmsg_len - sizeof(nlmsghdr));
        return ErrorInfo{};
      }
      Ack ack;
      ack.index = index;
      ack.flags = hdr.nlmsg_flags;
      ErrorInfo e = ReadError(hdr, msg, &ack.error, &ack.echo, &ack.echoLen);
      if (e.failed()) return e;
      markSeen(index);
      if (!toLast) {
        pending--;
      } else if (index == count - 1) {
        pending = 0;  // the replies before the last are refusals only: its own ends the exchange
      }
      onAck(ack);
      return ErrorInfo{};
    });
    if (err.failed()) return err;
  }
  dirty_ = false;
  answered_ = true;
  return ErrorInfo{};
}

ErrorInfo Engine::StartDump(const uint8_t* bytes, size_t len, uint32_t seq) {
  DrainBeforeSend();
  dirty_ = true;  // until NLMSG_DONE
  dumpInterrupted_ = false;
  return transport_->Send(bytes, len);
}

ErrorInfo Engine::NextDumpDatagram(uint32_t seq, int* replyError, bool* done, const MessageFn& onMessage) {
  *replyError = 0;
  *done = false;
  for (;;) {
    ErrorInfo err = transport_->Recv(&rx_, &rxLen_, timeoutMs_);
    if (err.failed()) {
      if (err.err == ENOBUFS) transport_->Drain();
      return err;
    }
    bool relevant = false;
    err = ForEachMessage(rx_, rxLen_, [&](const nlmsghdr& hdr, const uint8_t* msg, bool* stop) -> ErrorInfo {
      if (hdr.nlmsg_seq != seq) return ErrorInfo{};
      relevant = true;
      if (hdr.nlmsg_flags & NLM_F_DUMP_INTR) dumpInterrupted_ = true;
      if (hdr.nlmsg_type == NLMSG_DONE) {
        dirty_ = false;
        // NLMSG_DONE carries an int: non-zero when the dump itself failed.
        if (hdr.nlmsg_len >= sizeof(nlmsghdr) + sizeof(int32_t)) {
          ErrorInfo e = ReadCode(msg + sizeof(nlmsghdr), replyError);
          if (e.failed()) return e;
        }
        *done = true;
        *stop = true;
        return ErrorInfo{};
      }
      if (hdr.nlmsg_type == NLMSG_ERROR) {
        const uint8_t* echo;
        size_t echoLen;
        ErrorInfo e = ReadError(hdr, msg, replyError, &echo, &echoLen);
        if (e.failed()) return e;
        if (*replyError != 0) {
          *done = true;
          *stop = true;
        }
        return ErrorInfo{};
      }
      messageType_ = hdr.nlmsg_type;
      return onMessage(msg + sizeof(nlmsghdr), hdr.nlmsg_len - sizeof(nlmsghdr));
    });
    if (err.failed()) return err;
    if (relevant) {
      answered_ = true;
      return err;
    }
  }
}

ErrorInfo Engine::Dump(const uint8_t* bytes, size_t len, uint32_t seq, int* replyError, const MessageFn& onMessage) {
  ErrorInfo err = StartDump(bytes, len, seq);
  if (err.failed()) return err;
  bool done = false;
  while (!done) {
    err = NextDumpDatagram(seq, replyError, &done, onMessage);
    if (err.failed()) return err;
  }
  return ErrorInfo{};
}

ErrorInfo Engine::DumpWhole(Writer& w, const std::string& what, const std::function<void(uint32_t seq)>& encode,
                            const std::function<void()>& reset, int* replyError, const MessageFn& onMessage,
                            const std::function<bool()>& consistent) {
  *replyError = 0;
  for (int i = 0; i < kDumpAttempts; i++) {
    reset();
    w.Clear();
    uint32_t seq = ReserveSeq(1);
    encode(seq);
    ErrorInfo err = Dump(w.data(), w.size(), seq, replyError, onMessage);
    if (err.failed() || *replyError != 0) {
      reset();
      return err;
    }
    if (!dumpInterrupted_ && (!consistent || consistent())) return ErrorInfo{};
  }
  reset();
  ErrorInfo err = SystemError(EAGAIN, "recv");
  std::string times = std::to_string(kDumpAttempts) + " times in a row";
  err.message = consistent
                    ? what + " was inconsistent " + times + " (interrupted by changes, or listing an object twice)"
                    : what + " was interrupted by changes " + times;
  return err;
}

}  // namespace podnet::nl
