// libFuzzer target: the netlink engine's reply handling (Exchange with one or
// many seqs, Dump, and cursor dumps abandoned halfway) on datagrams from the
// fuzz input. Input: 17 control bytes, then frames (fuzz_input.h).
//   0     flags: bits 0-1 ops - 1, bit 2 failing sends, bit 3 skip seqs first
//   1-4   u32 seqs to reserve before the first op (reaches the wrap to 1)
//   5-16  four ops of 3 bytes [op, a, b]; op % 3:
//         0 Exchange of a % 100 + 1 requests (past 64 the seen set is a
//           vector), with onData when b & 1
//         1 Dump
//         2 StartDump, then at most a % 8 + 1 NextDumpDatagram calls: an
//           abandoned dump leaves the engine dirty for the next op
//         b >> 1: the callback fails at that message (0: never)
// scripts/fuzz-seeds.mjs writes seeds in this layout.
#include <linux/netlink.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <memory>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "netlink/engine.h"

using podnet::ErrorInfo;
using podnet::SystemError;
using podnet::fuzz::Bytes;
using podnet::fuzz::CheckError;
using podnet::fuzz::FuzzTransport;
using podnet::fuzz::Touch;
namespace nl = podnet::nl;

namespace {

constexpr size_t kControl = 17;

struct Op {
  uint8_t op, a, b;
};

std::vector<uint8_t> Requests(uint32_t first, uint32_t count, uint16_t flags) {
  std::vector<uint8_t> out;
  for (uint32_t i = 0; i < count; i++) {
    nlmsghdr hdr{};
    hdr.nlmsg_len = sizeof(nlmsghdr) + 4;
    hdr.nlmsg_type = 6 << 8 | 1;
    hdr.nlmsg_flags = flags;
    hdr.nlmsg_seq = first + i;
    const uint8_t* p = reinterpret_cast<const uint8_t*>(&hdr);
    out.insert(out.end(), p, p + sizeof hdr);
    out.insert(out.end(), {2, 0, 0, 0});
  }
  return out;
}

// A callback that fails at its failAt-th message, as a decoder that meets a
// bad message does.
nl::Engine::MessageFn Callback(uint8_t failAt, int* calls) {
  return [failAt, calls](const uint8_t* payload, size_t len) -> ErrorInfo {
    Touch(payload, len);
    if (++*calls == failAt) return SystemError(EBADMSG, "recv");
    return ErrorInfo{};
  };
}

void RunExchange(nl::Engine& engine, const Op& op) {
  uint32_t count = op.a % 100 + 1;
  uint32_t first = engine.ReserveSeq(count);
  std::vector<uint8_t> req = Requests(first, count, NLM_F_REQUEST | NLM_F_ACK);
  std::vector<bool> seen(count, false);
  uint32_t acks = 0;
  int calls = 0;
  nl::Engine::MessageFn onData = (op.b & 1) ? Callback(op.b >> 1, &calls) : nullptr;
  ErrorInfo err = engine.Exchange(
      req.data(), req.size(), first, count,
      [&](const nl::Ack& ack) {
        FUZZ_CHECK(ack.index < count);
        FUZZ_CHECK(!seen[ack.index]);
        FUZZ_CHECK(ack.error >= 0 && ack.error <= 0xffff);
        FUZZ_CHECK(ack.echo != nullptr || ack.echoLen == 0);
        Touch(ack.echo, ack.echoLen);
        seen[ack.index] = true;
        acks++;
      },
      onData);
  CheckError(err);
  if (!err.failed()) FUZZ_CHECK(acks == count);
}

void RunDump(nl::Engine& engine, const Op& op) {
  uint32_t seq = engine.ReserveSeq(1);
  std::vector<uint8_t> req = Requests(seq, 1, NLM_F_REQUEST | NLM_F_DUMP);
  int replyError = -1;
  int calls = 0;
  ErrorInfo err = engine.Dump(req.data(), req.size(), seq, &replyError, Callback(op.b >> 1, &calls));
  CheckError(err);
  if (!err.failed()) FUZZ_CHECK(replyError >= 0 && replyError <= 0xffff);
}

void RunCursor(nl::Engine& engine, const Op& op) {
  uint32_t seq = engine.ReserveSeq(1);
  std::vector<uint8_t> req = Requests(seq, 1, NLM_F_REQUEST | NLM_F_DUMP);
  ErrorInfo err = engine.StartDump(req.data(), req.size(), seq);
  CheckError(err);
  if (err.failed()) return;
  int calls = 0;
  nl::Engine::MessageFn onMessage = Callback(op.b >> 1, &calls);
  for (int i = 0; i < op.a % 8 + 1; i++) {
    int replyError = -1;
    bool done = true;
    err = engine.NextDumpDatagram(seq, &replyError, &done, onMessage);
    CheckError(err);
    if (err.failed()) return;
    FUZZ_CHECK(replyError >= 0 && replyError <= 0xffff);
    if (done) return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  uint8_t flags = in.U8();
  uint32_t skip = in.U32();
  Op ops[4];
  for (Op& op : ops) op = {in.U8(), in.U8(), in.U8()};
  if (size < kControl) return 0;

  auto owned = std::make_unique<FuzzTransport>(&in, 0);
  FuzzTransport* transport = owned.get();
  transport->set_fail_sends((flags & 4) != 0);
  nl::Engine engine(std::move(owned), 1000);
  if (flags & 8) engine.ReserveSeq(skip);

  for (int i = 0; i <= (flags & 3); i++) {
    switch (ops[i].op % 3) {
      case 0: RunExchange(engine, ops[i]); break;
      case 1: RunDump(engine, ops[i]); break;
      default: RunCursor(engine, ops[i]); break;
    }
  }
  return 0;
}
