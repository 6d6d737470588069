#include "cni/cni_output.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cni/utf8.h"

namespace podnet::cni {

namespace {

// The versions podnet converts results between (CniServer answers in the config's own version).
constexpr const char* kSupportedVersions[] = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};

}  // namespace

void AppendJsonString(std::string* out, const std::string& s) {
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    uint8_t c = static_cast<uint8_t>(s[i]);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
      ++i;
    } else if (c == '\n') {
      out->append("\\n");
      ++i;
    } else if (c == '\t') {
      out->append("\\t");
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      char escaped[8];
      snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out->append(escaped);
      ++i;
    } else if (c < 0x80) {
      out->push_back(static_cast<char>(c));
      ++i;
    } else if (size_t n = Utf8CharLength(reinterpret_cast<const uint8_t*>(s.data()) + i, s.size() - i); n > 0) {
      out->append(s, i, n);
      i += n;
    } else {
      out->append("\\ufffd");
      ++i;
    }
  }
  out->push_back('"');
}

std::string ErrorJson(const std::string& cni_version, int code, const std::string& msg, const std::string& details) {
  std::string out = "{\"cniVersion\":";
  AppendJsonString(&out, cni_version);
  out += ",\"code\":" + std::to_string(code) + ",\"msg\":";
  AppendJsonString(&out, msg);
  out += ",\"details\":";
  AppendJsonString(&out, details);
  out += "}\n";
  return out;
}

std::string VersionJson(const std::string& cni_version) {
  std::string out = "{\"cniVersion\":";
  AppendJsonString(&out, cni_version);
  out += ",\"supportedVersions\":[";
  for (size_t i = 0; i < sizeof kSupportedVersions / sizeof kSupportedVersions[0]; ++i) {
    if (i > 0) out.push_back(',');
    AppendJsonString(&out, kSupportedVersions[i]);
  }
  out += "]}\n";
  return out;
}

}  // namespace podnet::cni
