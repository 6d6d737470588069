// One request and its answer over the agent's SOCK_SEQPACKET socket (docs/cni-protocol.md), every step bounded by
// the invocation's deadline.
#pragma once

#include <stdint.h>

#include <string>
#include <vector>

#include "cni/deadline.h"
#include "cni/wire.h"

namespace podnet::cni {

// ExchangeFailure says why no answer came: reason for the CNI error's msg, details for its details.
struct ExchangeFailure {
  std::string reason;
  std::string details;
};

// Exchange connects to socket_path, sends header (with netns_fd attached when it is >= 0) and config in chunks,
// and reads the whole answer into *answer. Returns false with *failure when the agent cannot be reached, the
// deadline passes, or the answer breaks a rule of the protocol (an fd attached, a message too long, a stream
// longer than announced, the connection closed early).
bool Exchange(const std::string& socket_path, const Deadline& deadline, uint32_t timeout_ms, int netns_fd,
              const std::vector<uint8_t>& header, const std::string& config, AnswerReader* answer,
              ExchangeFailure* failure);

}  // namespace podnet::cni
