#include "cni/plugin_config.h"

#include <math.h>
#include <stdlib.h>

namespace podnet::cni {

std::string EchoedCniVersion(const ConfigKeys& keys) {
  return keys.cni_version.kind == JsonKind::kString ? keys.cni_version.text : kDefaultCniVersion;
}

namespace {

// TimeoutFrom reads a JSON number literal (already checked by the scanner) as a whole number of milliseconds. JSON
// gives 1e3 and 1000.0 the value 1000, so they are taken as such.
bool TimeoutFrom(const std::string& literal, uint32_t* ms) {
  double value = strtod(literal.c_str(), nullptr);
  if (!isfinite(value) || value != floor(value) || value < 1 || value > kMaxTimeoutMs) return false;
  *ms = static_cast<uint32_t>(value);
  return true;
}

}  // namespace

bool ResolvePluginConfig(const ConfigKeys& keys, PluginConfig* config, std::string* error) {
  *config = PluginConfig{};
  if (keys.cni_version.kind != JsonKind::kAbsent && keys.cni_version.kind != JsonKind::kString) {
    *error = "\"cniVersion\" must be a string";
    return false;
  }
  const ScannedValue& path = keys.socket_path;
  if (path.kind != JsonKind::kAbsent) {
    if (path.kind != JsonKind::kString || path.text.empty() || path.text.size() > kMaxSocketPath ||
        path.text.find('\0') != std::string::npos) {
      *error = "\"socketPath\" must be a socket path of 1 to " + std::to_string(kMaxSocketPath) + " bytes without NUL";
      return false;
    }
    config->socket_path = path.text;
  }
  const ScannedValue& timeout = keys.timeout_ms;
  if (timeout.kind != JsonKind::kAbsent) {
    if (timeout.kind != JsonKind::kNumber || !TimeoutFrom(timeout.text, &config->timeout_ms)) {
      *error = "\"timeoutMs\" must be an integer from 1 to " + std::to_string(kMaxTimeoutMs);
      return false;
    }
  }
  return true;
}

}  // namespace podnet::cni
