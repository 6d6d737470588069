// What the fuzz targets share: a reader over the fuzz input that never fails
// (past the end every read is zero, so every input means something), and a
// netlink Transport that answers with datagrams taken from that input.
//
// After a target's own control bytes, the input is a list of frames:
//   u8 kind, u16 length (little-endian), length bytes
// kind % 3:
//   0  one datagram, as is but for nlmsg_seq: each message's seq counts from
//      the first seq of the last request sent (0 answers it, 1 the next one
//      of a batch, 0xffffffff the one before). The code under test reserves
//      its seqs itself; relative seqs keep seeds and mutations aimed at them
//      while every absolute value stays reachable.
//   1  an NLMSG_ERROR the way the kernel builds one, echoing the last request
//      sent: i32 error, u32 relative seq, u32 lineno. When the target names a
//      lineno attribute the echo's top-level copy of it gets that value in
//      network order (as ipset does), which a raw datagram could only hit by
//      guessing the request's exact bytes.
//   2  a barrier: Drain() throws away the frames up to it. The kernel queues
//      replies nobody waits for any more; the frames before a barrier are
//      those, and without a barrier there is nothing queued.
// No N-API and no sockets: this links with the plain engine and codecs only.
#pragma once

#include <endian.h>
#include <errno.h>
#include <linux/netlink.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <deque>
#include <vector>

#include "netlink/attr.h"
#include "netlink/transport.h"

// An invariant of the code under test broke. abort() is what libFuzzer
// reports as a crash, with the input saved for a regression.
#define FUZZ_CHECK(cond)                                                          \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      abort();                                                                    \
    }                                                                             \
  } while (0)

namespace podnet::fuzz {

// What every failure must look like by the time it reaches JS: a positive
// errno or protocol code that fits the 16 bits the engine admits, or a code.
inline void CheckError(const ErrorInfo& err) {
  FUZZ_CHECK(err.err >= 0 && err.err <= 0xffff);
  FUZZ_CHECK(err.kind != nullptr);
}

class Bytes {
 public:
  Bytes(const uint8_t* data, size_t len) : p_(data), end_(data + len) {}
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  const uint8_t* here() const { return p_; }

  uint8_t U8() {
    if (p_ == end_) return 0;
    return *p_++;
  }
  uint16_t U16() { return static_cast<uint16_t>(U8() | U8() << 8); }
  uint32_t U32() { return static_cast<uint32_t>(U16()) | static_cast<uint32_t>(U16()) << 16; }
  // Up to n bytes (fewer at the end); *got says how many.
  const uint8_t* Take(size_t n, size_t* got) {
    const uint8_t* at = p_;
    *got = n < left() ? n : left();
    p_ += *got;
    return at;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// Reads every byte of [data, data+len), so ASan sees any span that reaches
// past what the code under test was given.
inline uint8_t Touch(const uint8_t* data, size_t len) {
  uint8_t sum = 0;
  for (size_t i = 0; i < len; i++) sum = static_cast<uint8_t>(sum + data[i]);
  return sum;
}

class FuzzTransport final : public nl::Transport {
 public:
  enum Kind : uint8_t { kDatagram = 0, kEchoError = 1, kBarrier = 2 };

  // lineno: the top-level attribute a kEchoError frame overwrites (0: none).
  FuzzTransport(Bytes* in, uint16_t lineno) : lineno_(lineno) {
    while (in->left() > 0) {
      Frame f;
      f.kind = static_cast<Kind>(in->U8() % 3);
      size_t got;
      const uint8_t* at = in->Take(in->U16(), &got);
      f.bytes.assign(at, at + got);
      frames_.push_back(std::move(f));
    }
  }

  ErrorInfo Send(const uint8_t* data, size_t len) override {
    sent_.assign(data, data + len);
    if (len >= sizeof(nlmsghdr)) memcpy(&base_, data + 8, 4);
    sends_++;
    // A send failure must be reachable too: every 16th send of an input that asks for it.
    if (failSends_ && sends_ % 16 == 0) return SystemError(ENOBUFS, "sendmsg");
    return ErrorInfo{};
  }

  ErrorInfo Recv(nl::RxBuffer* buf, size_t* len, int) override {
    while (!frames_.empty() && frames_.front().kind == kBarrier) frames_.pop_front();
    if (frames_.empty()) return SystemError(ETIMEDOUT, "recv");
    Frame f = std::move(frames_.front());
    frames_.pop_front();
    std::vector<uint8_t> d = f.kind == kEchoError ? EchoError(f.bytes) : Rebase(std::move(f.bytes));
    // Exactly the datagram's size, unlike the socket's reused buffer: built
    // with _GLIBCXX_SANITIZE_VECTOR, a read past *len is then a container
    // overflow instead of stale bytes from an earlier datagram.
    buf->assign(d.begin(), d.end());
    *len = d.size();
    return ErrorInfo{};
  }

  void Drain() override {
    for (size_t i = 0; i < frames_.size(); i++) {
      if (frames_[i].kind == kBarrier) {
        frames_.erase(frames_.begin(), frames_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        return;
      }
    }
  }

  void set_fail_sends(bool on) { failSends_ = on; }
  size_t frames_left() const { return frames_.size(); }

 private:
  struct Frame {
    Kind kind = kDatagram;
    std::vector<uint8_t> bytes;
  };

  // Walks the messages as far as their lengths make sense; past that the
  // bytes stay as they are, for the engine to refuse.
  std::vector<uint8_t> Rebase(std::vector<uint8_t> d) const {
    size_t off = 0;
    while (off + sizeof(nlmsghdr) <= d.size()) {
      uint32_t len, seq;
      memcpy(&len, d.data() + off, 4);
      memcpy(&seq, d.data() + off + 8, 4);
      seq += base_;
      memcpy(d.data() + off + 8, &seq, 4);
      if (len < sizeof(nlmsghdr) || len > d.size() - off) break;
      off += NLMSG_ALIGN(static_cast<size_t>(len));
    }
    return d;
  }

  std::vector<uint8_t> EchoError(const std::vector<uint8_t>& spec) const {
    Bytes in(spec.data(), spec.size());
    int32_t error = static_cast<int32_t>(in.U32());
    uint32_t seq = base_ + in.U32();
    uint32_t lineno = in.U32();
    // The echo is the first message of the last send, as far as it goes.
    size_t echoLen = 0;
    if (sent_.size() >= sizeof(nlmsghdr)) {
      uint32_t l;
      memcpy(&l, sent_.data(), 4);
      echoLen = l <= sent_.size() ? l : sent_.size();
    }
    std::vector<uint8_t> d(sizeof(nlmsghdr) + 4 + NLMSG_ALIGN(echoLen), 0);
    nlmsghdr hdr{};
    hdr.nlmsg_len = static_cast<uint32_t>(d.size());
    hdr.nlmsg_type = NLMSG_ERROR;
    hdr.nlmsg_seq = seq;
    memcpy(d.data(), &hdr, sizeof hdr);
    memcpy(d.data() + sizeof hdr, &error, 4);
    uint8_t* echo = d.data() + sizeof hdr + 4;
    if (echoLen > 0) memcpy(echo, sent_.data(), echoLen);
    constexpr size_t kHead = sizeof(nlmsghdr) + 4;  // nlmsghdr + nfgenmsg
    if (lineno_ != 0 && echoLen > kHead) {
      nl::AttrIter it(echo + kHead, echoLen - kHead);
      nl::Attr a;
      while (it.Next(&a)) {
        if (a.type == lineno_ && a.len == 4) {
          uint32_t be = htobe32(lineno);
          memcpy(const_cast<uint8_t*>(a.data), &be, 4);
        }
      }
    }
    return d;
  }

  uint16_t lineno_;
  std::deque<Frame> frames_;
  std::vector<uint8_t> sent_;
  uint32_t base_ = 0;
  uint64_t sends_ = 0;
  bool failSends_ = false;
};

}  // namespace podnet::fuzz
