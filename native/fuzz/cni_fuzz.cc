// libFuzzer target: everything podnet-cni parses, with no sockets. The input is split at its first 0xFE byte (a
// byte that is never valid anywhere in UTF-8 JSON, so nothing the scanner could accept is lost):
//   before it: the network config. ScanConfig must accept or refuse it without crashing; what it accepts must
//              resolve into settings within the protocol's ranges, and the documents the plugin prints from it
//              (the VERSION answer, a CNI error naming the socket) must scan back as JSON objects carrying the same
//              cniVersion. The config bytes themselves, escaped as a JSON string, must scan too (any bytes escape
//              to valid JSON), and split at ';' they are a request's env entries: what EncodeRequestHeader accepts
//              must decode back entry for entry within one message.
//   after it:  the answer's messages as frames, u16 length (little-endian) and that many bytes (a length past the
//              end takes what is left; 0 is the agent closing). AnswerReader must end broken with a reason, or
//              done with both streams exactly as long as the header announced.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cni/cni_output.h"
#include "cni/config_scan.h"
#include "cni/plugin_config.h"
#include "cni/wire.h"
#include "fuzz/fuzz_input.h"

namespace cni = podnet::cni;

namespace {

constexpr uint8_t kSplit = 0xfe;

// ScanBack scans a document the plugin printed and returns its cniVersion.
std::string ScanBack(const std::string& doc) {
  cni::ConfigKeys keys;
  std::string error;
  bool ok = cni::ScanConfig(reinterpret_cast<const uint8_t*>(doc.data()), doc.size(), &keys, &error);
  if (!ok) fprintf(stderr, "printed document does not scan (%s): %s\n", error.c_str(), doc.c_str());
  FUZZ_CHECK(ok);
  FUZZ_CHECK(keys.cni_version.kind == cni::JsonKind::kString);
  return keys.cni_version.text;
}

void CheckConfig(const uint8_t* data, size_t len) {
  cni::ConfigKeys keys;
  std::string error;
  std::string raw(reinterpret_cast<const char*>(data), len);
  if (!cni::ScanConfig(data, len, &keys, &error)) {
    FUZZ_CHECK(!error.empty());
  } else {
    std::string version = cni::EchoedCniVersion(keys);
    FUZZ_CHECK(ScanBack(cni::VersionJson(version)) == version);
    cni::PluginConfig settings;
    std::string why;
    if (cni::ResolvePluginConfig(keys, &settings, &why)) {
      FUZZ_CHECK(!settings.socket_path.empty() && settings.socket_path.size() <= cni::kMaxSocketPath);
      FUZZ_CHECK(settings.socket_path.find('\0') == std::string::npos);
      FUZZ_CHECK(settings.timeout_ms >= 1 && settings.timeout_ms <= cni::kMaxTimeoutMs);
      std::string msg = "podnet agent not reachable at " + settings.socket_path + ": connect";
      FUZZ_CHECK(ScanBack(cni::ErrorJson(version, 11, msg, raw)) == version);
    } else {
      FUZZ_CHECK(!why.empty());
    }
  }
  // Arbitrary bytes as a string value: the escaping alone must make the document valid.
  std::string doc = "{\"cniVersion\":";
  cni::AppendJsonString(&doc, raw);
  doc += "}";
  ScanBack(doc);
}

void CheckRequest(const uint8_t* data, size_t len) {
  cni::RequestHeader header;
  header.stdin_length = static_cast<uint32_t>(len);
  header.netns_errno = len > 0 ? data[0] : 0;
  header.has_netns_fd = len > 1 && (data[1] & 1);
  size_t start = 0;
  for (size_t i = 0; i <= len && header.env.size() <= cni::kMaxEnvCount; ++i) {
    if (i == len || data[i] == ';') {
      header.env.emplace_back(reinterpret_cast<const char*>(data) + start, i - start);
      start = i + 1;
    }
  }
  std::vector<uint8_t> bytes;
  std::string error;
  if (!cni::EncodeRequestHeader(header, &bytes, &error)) {
    FUZZ_CHECK(!error.empty());
    return;
  }
  FUZZ_CHECK(bytes.size() <= cni::kMaxMessage && bytes.size() >= cni::kRequestHeaderFixed);
  FUZZ_CHECK(memcmp(bytes.data(), "PNCQ\x01\x00", 6) == 0);
  auto u32 = [&](size_t at) {
    return static_cast<uint32_t>(bytes[at]) | static_cast<uint32_t>(bytes[at + 1]) << 8 |
           static_cast<uint32_t>(bytes[at + 2]) << 16 | static_cast<uint32_t>(bytes[at + 3]) << 24;
  };
  FUZZ_CHECK(bytes[6] == (header.has_netns_fd ? 1 : 0) && bytes[7] == 0);
  FUZZ_CHECK(u32(8) == header.stdin_length && u32(12) == static_cast<uint32_t>(header.netns_errno));
  FUZZ_CHECK(u32(16) == header.env.size());
  size_t at = cni::kRequestHeaderFixed;
  for (const std::string& entry : header.env) {
    FUZZ_CHECK(at + 4 <= bytes.size());
    uint32_t n = u32(at);
    FUZZ_CHECK(n == entry.size() && n >= 1 && n <= cni::kMaxEnvEntry && at + 4 + n <= bytes.size());
    FUZZ_CHECK(memcmp(bytes.data() + at + 4, entry.data(), n) == 0);
    at += 4 + n;
  }
  FUZZ_CHECK(at == bytes.size());
}

void CheckAnswer(const uint8_t* data, size_t len) {
  cni::AnswerReader reader;
  size_t at = 0;
  for (;;) {
    size_t n = 0;
    if (at + 2 <= len) {
      n = static_cast<size_t>(data[at] | data[at + 1] << 8);
      at += 2;
    } else {
      at = len;  // out of frames: the agent closed
    }
    n = std::min(n, len - at);
    cni::AnswerReader::Step step = reader.Take(data + at, n);
    at += n;
    if (step == cni::AnswerReader::Step::kBroken) {
      FUZZ_CHECK(!reader.error().empty());
      return;
    }
    if (step == cni::AnswerReader::Step::kDone) {
      const cni::AnswerHeader& h = reader.header();
      FUZZ_CHECK(h.exit_status <= 255);
      FUZZ_CHECK(reader.stdout_bytes().size() == h.stdout_length && h.stdout_length <= cni::kMaxStdout);
      FUZZ_CHECK(reader.stderr_bytes().size() == h.stderr_length && h.stderr_length <= cni::kMaxStderr);
      return;
    }
    // kMore after a frame of nothing cannot be: an empty message is the end of the connection.
    FUZZ_CHECK(n > 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t* split = static_cast<const uint8_t*>(memchr(data, kSplit, size));
  size_t config_len = split ? static_cast<size_t>(split - data) : size;
  CheckConfig(data, config_len);
  CheckRequest(data, config_len);
  if (split) CheckAnswer(split + 1, size - config_len - 1);
  return 0;
}
