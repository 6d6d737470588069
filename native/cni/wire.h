// The plugin's side of docs/cni-protocol.md: the request header it encodes and the answer it decodes. Plain bytes
// in and out (no sockets), so the fuzz target links it as it is.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

namespace podnet::cni {

// The protocol's limits (WIRE_LIMITS in lib/cni/wire.ts).
inline constexpr size_t kMaxMessage = 65536;
inline constexpr size_t kMaxConfig = 1048576;
inline constexpr size_t kMaxEnvCount = 64;
inline constexpr size_t kMaxEnvEntry = 16384;
inline constexpr size_t kMaxStdout = 1048576;
inline constexpr size_t kMaxStderr = 65536;
inline constexpr size_t kRequestHeaderFixed = 20;
inline constexpr size_t kAnswerHeaderSize = 20;

// RequestHeader is message 1 of a request.
struct RequestHeader {
  bool has_netns_fd = false;
  uint32_t stdin_length = 0;
  int32_t netns_errno = 0;
  std::vector<std::string> env;  // NAME=VALUE, in the order of environ
};

// EncodeRequestHeader writes header's bytes to *out. Returns false with *error saying which limit an entry or the
// whole header breaks (more than 64 entries, an entry of 0 or over 16384 bytes, a config over 1 MiB, or a header
// over one 65536-byte message).
bool EncodeRequestHeader(const RequestHeader& header, std::vector<uint8_t>* out, std::string* error);

// AnswerHeader is message 1 of an answer.
struct AnswerHeader {
  uint32_t exit_status = 0;
  uint32_t stdout_length = 0;
  uint32_t stderr_length = 0;
};

// DecodeAnswerHeader reads an answer header from one whole message. Returns false with *error on any broken rule:
// a size other than 20, the magic, the version, nonzero flags, an exit status over 255, stream lengths over their
// limits.
bool DecodeAnswerHeader(const uint8_t* data, size_t len, AnswerHeader* header, std::string* error);

// AnswerReader assembles an answer from its messages, in order.
class AnswerReader {
 public:
  enum class Step { kMore, kDone, kBroken };

  // Take feeds the next message (len 0: the agent closed the connection). After kDone or kBroken it must not be
  // called again; error() says why an answer broke.
  Step Take(const uint8_t* data, size_t len);

  const AnswerHeader& header() const { return header_; }
  const std::string& stdout_bytes() const { return stdout_; }
  const std::string& stderr_bytes() const { return stderr_; }
  const std::string& error() const { return error_; }

 private:
  Step Broken(std::string why);
  Step Progress();

  bool have_header_ = false;
  AnswerHeader header_;
  std::string stdout_;
  std::string stderr_;
  std::string error_;
};

}  // namespace podnet::cni
