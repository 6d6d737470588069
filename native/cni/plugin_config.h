// The plugin's own settings from its conflist entry (docs/cni-protocol.md): where the agent listens, how long an
// invocation may take, and the cniVersion it echoes. Everything else in the config is the agent's to read.
#pragma once

#include <stdint.h>

#include <string>

#include "cni/config_scan.h"

namespace podnet::cni {

inline constexpr char kDefaultSocketPath[] = "/var/run/podnet/cni.sock";
inline constexpr uint32_t kDefaultTimeoutMs = 10000;
inline constexpr uint32_t kMaxTimeoutMs = 600000;
// The cniVersion of the VERSION answer and of errors when the config names none.
inline constexpr char kDefaultCniVersion[] = "1.1.0";
// sun_path holds 108 bytes, the last a NUL.
inline constexpr size_t kMaxSocketPath = 107;

// PluginConfig is the plugin's settings, checked.
struct PluginConfig {
  std::string socket_path = kDefaultSocketPath;
  uint32_t timeout_ms = kDefaultTimeoutMs;
};

// EchoedCniVersion is the cniVersion the plugin writes into its own output: the config's when it is a string,
// otherwise kDefaultCniVersion.
std::string EchoedCniVersion(const ConfigKeys& keys);

// ResolvePluginConfig fills *config from keys, with defaults for absent keys. Returns false with *error naming the
// key and what was wrong when a key has the wrong type or is out of range (socketPath: 1..107 bytes, no NUL;
// timeoutMs: an integer 1..600000; cniVersion: a string).
bool ResolvePluginConfig(const ConfigKeys& keys, PluginConfig* config, std::string* error);

}  // namespace podnet::cni
