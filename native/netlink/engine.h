// The one netlink engine: sequence numbers, ACK and error collection,
// multipart dumps, deadlines. Protocol codecs (ipset, ...) build messages with
// a Writer and read replies through the callbacks; they never touch sockets.
#pragma once

#include <stdint.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "netlink/attr.h"
#include "netlink/transport.h"

namespace podnet::nl {

// A reply to one acked request: error 0 is an ACK; otherwise the positive
// error (errno or protocol code) and the request the kernel echoed back.
struct Ack {
  uint32_t index = 0;  // position of the request in the exchange
  int error = 0;
  uint16_t flags = 0;  // of the NLMSG_ERROR: NLM_F_CAPPED, NLM_F_ACK_TLVS
  const uint8_t* echo = nullptr;  // echoed nlmsghdr + payload, valid during the callback
  size_t echoLen = 0;
};

// kDumpAttempts is how often DumpWhole takes a dump the kernel flags
// NLM_F_DUMP_INTR before the caller gets EAGAIN: a table that changes during
// every one of them is being rewritten faster than it can be read.
constexpr int kDumpAttempts = 5;

class Engine {
 public:
  Engine(std::unique_ptr<Transport> transport, int timeoutMs)
      : transport_(std::move(transport)), timeoutMs_(timeoutMs) {}

  Transport& transport() { return *transport_; }
  int timeoutMs() const { return timeoutMs_; }
  void set_timeout(int ms) { timeoutMs_ = ms; }

  // Reserves count consecutive sequence numbers; requests carry first+index.
  uint32_t ReserveSeq(uint32_t count);

  // Sends bytes (count messages with seqs first..first+count-1, all with
  // NLM_F_ACK) in one sendmsg and waits for one reply per message. ETIMEDOUT
  // when no reply arrives for timeoutMs; replies to other seqs are dropped.
  // Replies that are not ACKs (TYPE and PROTOCOL answer with a message before
  // their ACK) go to onData when given.
  using MessageFn = std::function<ErrorInfo(const uint8_t* payload, size_t len)>;
  ErrorInfo Exchange(const uint8_t* bytes, size_t len, uint32_t first, uint32_t count,
                     const std::function<void(const Ack&)>& onAck, const MessageFn& onData = nullptr);

  // As Exchange, for requests of which only the last (seq first+count-1)
  // asks NLM_F_ACK: the kernel answers the others only when it refuses them,
  // and always before the last one's reply, so the exchange ends with that
  // reply. onAck sees every reply in the window: the refusals and the last.
  ErrorInfo ExchangeToLast(const uint8_t* bytes, size_t len, uint32_t first, uint32_t count,
                           const std::function<void(const Ack&)>& onAck);

  // Sends one dump request and calls onMessage for each multipart message
  // until NLMSG_DONE. An NLMSG_ERROR (missing set, ...) ends it with that error
  // in *replyError (0 when the dump completed).
  ErrorInfo Dump(const uint8_t* bytes, size_t len, uint32_t seq, int* replyError, const MessageFn& onMessage);

  // Takes a dump whole: encode writes the request for the seq it is given
  // into w; the dump is sent and read to NLMSG_DONE (as Dump), and taken
  // again while the kernel flags it NLM_F_DUMP_INTR, reset emptying the
  // caller's output before each attempt. A dump the kernel ends with an
  // error code is not taken again: the code is in *replyError. EAGAIN once
  // kDumpAttempts in a row were interrupted; what names the dump in that error
  // ("rtnetlink dump of routes"). Whenever it returns an error or a non-zero
  // *replyError, reset has emptied the output: a failed dump hands on
  // nothing of what it decoded. consistent, when given, checks a dump the
  // kernel did not flag (a set's elements, each listed once): one it finds
  // inconsistent is taken again, as an interrupted one is.
  ErrorInfo DumpWhole(Writer& w, const std::string& what, const std::function<void(uint32_t seq)>& encode,
                      const std::function<void()>& reset, int* replyError, const MessageFn& onMessage,
                      const std::function<bool()>& consistent = nullptr);

  // Cursor-style dumps: StartDump sends, NextDumpDatagram reads one datagram
  // and feeds its messages; *done turns true at NLMSG_DONE or error.
  ErrorInfo StartDump(const uint8_t* bytes, size_t len, uint32_t seq);
  ErrorInfo NextDumpDatagram(uint32_t seq, int* replyError, bool* done, const MessageFn& onMessage);
  // True when a message of the last dump carried NLM_F_DUMP_INTR: the kernel
  // changed the table while dumping it, so the dump may have missed or
  // repeated objects and should be taken again.
  bool dump_interrupted() const { return dumpInterrupted_; }
  // nlmsg_type of the message being handed to onData / onMessage right now:
  // families whose replies come in several types check it.
  uint16_t message_type() const { return messageType_; }
  // True once an exchange or a dump datagram of this engine was read without
  // error: the socket has offered the kernel a receive buffer that returned
  // data (nf_tables sizes dump datagrams by it).
  bool answered() const { return answered_; }

 private:
  // Throws away queued replies to earlier requests before a request is sent.
  void DrainBeforeSend();

  std::unique_ptr<Transport> transport_;
  int timeoutMs_;
  uint32_t nextSeq_ = 1;
  ErrorInfo ExchangeReplies(const uint8_t* bytes, size_t len, uint32_t first, uint32_t count, bool toLast,
                            const std::function<void(const Ack&)>& onAck, const MessageFn& onData);

  RxBuffer rx_;
  size_t rxLen_ = 0;
  // Set when an exchange or dump ended early (timeout, error, abandoned
  // dump): replies may still be queued, so the next request drains first.
  bool dirty_ = false;
  bool dumpInterrupted_ = false;
  bool answered_ = false;
  uint16_t messageType_ = 0;
};

}  // namespace podnet::nl
