#include "cni/wire.h"

#include <string.h>

namespace podnet::cni {

namespace {

constexpr uint8_t kRequestMagic[4] = {'P', 'N', 'C', 'Q'};
constexpr uint8_t kAnswerMagic[4] = {'P', 'N', 'C', 'A'};
constexpr uint16_t kVersion = 1;
constexpr uint16_t kFlagNetnsFd = 1;

uint8_t* PutU16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  return p + 2;
}

uint8_t* PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
  return p + 4;
}

uint16_t GetU16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | p[1] << 8);
}

uint32_t GetU32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace

bool EncodeRequestHeader(const RequestHeader& header, std::vector<uint8_t>* out, std::string* error) {
  if (header.stdin_length > kMaxConfig) {
    *error = "the network config is " + std::to_string(header.stdin_length) + " bytes, over " +
             std::to_string(kMaxConfig);
    return false;
  }
  if (header.env.size() > kMaxEnvCount) {
    *error = std::to_string(header.env.size()) + " CNI_ environment variables, over " + std::to_string(kMaxEnvCount);
    return false;
  }
  size_t total = kRequestHeaderFixed;
  for (const std::string& entry : header.env) {
    if (entry.empty() || entry.size() > kMaxEnvEntry) {
      *error = "environment variable " + entry.substr(0, entry.find('=')) + " is " + std::to_string(entry.size()) +
               " bytes, over " + std::to_string(kMaxEnvEntry);
      return false;
    }
    total += 4 + entry.size();
  }
  if (total > kMaxMessage) {
    *error = "the CNI_ environment variables take " + std::to_string(total) + " bytes, over one " +
             std::to_string(kMaxMessage) + "-byte message";
    return false;
  }
  out->assign(total, 0);
  uint8_t* p = out->data();
  memcpy(p, kRequestMagic, sizeof kRequestMagic);
  p = PutU16(p + sizeof kRequestMagic, kVersion);
  p = PutU16(p, header.has_netns_fd ? kFlagNetnsFd : 0);
  p = PutU32(p, header.stdin_length);
  p = PutU32(p, static_cast<uint32_t>(header.netns_errno));
  p = PutU32(p, static_cast<uint32_t>(header.env.size()));
  for (const std::string& entry : header.env) {
    p = PutU32(p, static_cast<uint32_t>(entry.size()));
    memcpy(p, entry.data(), entry.size());
    p += entry.size();
  }
  return true;
}

bool DecodeAnswerHeader(const uint8_t* data, size_t len, AnswerHeader* header, std::string* error) {
  if (len != kAnswerHeaderSize) {
    *error = "answer header of " + std::to_string(len) + " bytes, not " + std::to_string(kAnswerHeaderSize);
    return false;
  }
  if (memcmp(data, kAnswerMagic, 4) != 0) {
    *error = "bad magic in the answer header";
    return false;
  }
  if (GetU16(data + 4) != kVersion) {
    *error = "answer version " + std::to_string(GetU16(data + 4)) + ", not 1";
    return false;
  }
  if (GetU16(data + 6) != 0) {
    *error = "answer flags " + std::to_string(GetU16(data + 6)) + ", not 0";
    return false;
  }
  AnswerHeader h;
  h.exit_status = GetU32(data + 8);
  h.stdout_length = GetU32(data + 12);
  h.stderr_length = GetU32(data + 16);
  if (h.exit_status > 255) {
    *error = "exit status " + std::to_string(h.exit_status) + " in the answer, over 255";
    return false;
  }
  if (h.stdout_length > kMaxStdout) {
    *error = "stdout of " + std::to_string(h.stdout_length) + " bytes in the answer, over " + std::to_string(kMaxStdout);
    return false;
  }
  if (h.stderr_length > kMaxStderr) {
    *error = "stderr of " + std::to_string(h.stderr_length) + " bytes in the answer, over " + std::to_string(kMaxStderr);
    return false;
  }
  *header = h;
  return true;
}

AnswerReader::Step AnswerReader::Broken(std::string why) {
  error_ = std::move(why);
  return Step::kBroken;
}

// Progress says whether both streams are complete.
AnswerReader::Step AnswerReader::Progress() {
  bool done = stdout_.size() == header_.stdout_length && stderr_.size() == header_.stderr_length;
  return done ? Step::kDone : Step::kMore;
}

AnswerReader::Step AnswerReader::Take(const uint8_t* data, size_t len) {
  if (len == 0) {
    return Broken(have_header_ ? "the agent closed the connection before the answer was complete"
                               : "the agent closed the connection without answering");
  }
  if (len > kMaxMessage) return Broken("answer message over " + std::to_string(kMaxMessage) + " bytes");
  if (!have_header_) {
    std::string why;
    if (!DecodeAnswerHeader(data, len, &header_, &why)) return Broken(why);
    have_header_ = true;
    return Progress();
  }
  // A message belongs to stdout until it is complete, then to stderr; none spans both.
  bool to_stdout = stdout_.size() < header_.stdout_length;
  std::string& stream = to_stdout ? stdout_ : stderr_;
  size_t room = (to_stdout ? header_.stdout_length : header_.stderr_length) - stream.size();
  if (len > room) {
    return Broken(std::string(to_stdout ? "stdout" : "stderr") + " longer than the " +
                  std::to_string(to_stdout ? header_.stdout_length : header_.stderr_length) +
                  " bytes the answer header announced");
  }
  stream.append(reinterpret_cast<const char*>(data), len);
  return Progress();
}

}  // namespace podnet::cni
