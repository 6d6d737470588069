// A strict JSON scanner for the plugin's network config: it checks that the whole document is exactly one JSON
// object (RFC 8259: UTF-8, no BOM, no trailing bytes) and picks the top-level keys the plugin reads. It never
// allocates per nesting level on the call stack (the nesting is an explicit stack), so no input crashes it, and it
// looks at each byte a bounded number of times, so none hangs it.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>

namespace podnet::cni {

// JsonKind is what a picked key held.
enum class JsonKind { kAbsent, kString, kNumber, kOther };

// ScannedValue is one picked top-level value: a string's decoded UTF-8 text (lone surrogate escapes as U+FFFD), or
// a number's literal text. When a key occurs more than once the last one counts, as JSON.parse and Go's
// encoding/json take it.
struct ScannedValue {
  JsonKind kind = JsonKind::kAbsent;
  std::string text;
};

// ConfigKeys are the top-level keys of the config the plugin reads.
struct ConfigKeys {
  ScannedValue cni_version;  // "cniVersion"
  ScannedValue socket_path;  // "socketPath"
  ScannedValue timeout_ms;   // "timeoutMs"
};

// ScanConfig scans data[0..len) and fills *keys. Returns false with *error saying what is wrong and at which byte
// offset when the document is not one JSON object; *keys is then unspecified.
bool ScanConfig(const uint8_t* data, size_t len, ConfigKeys* keys, std::string* error);

}  // namespace podnet::cni
