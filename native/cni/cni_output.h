// The JSON documents the plugin writes itself, without the agent: CNI errors (SPEC.md "Error") and the VERSION
// answer. Strings are escaped so that any bytes (an echoed cniVersion, a socket path, strerror text) give valid
// JSON: control characters as \u00XX, and bytes that are not UTF-8 as U+FFFD.
#pragma once

#include <string>

namespace podnet::cni {

// Well-known CNI error codes the plugin answers with.
inline constexpr int kCniErrInvalidEnv = 4;        // invalid necessary environment variables
inline constexpr int kCniErrIo = 5;                // I/O failure
inline constexpr int kCniErrDecode = 6;            // failed to decode content
inline constexpr int kCniErrInvalidConfig = 7;     // invalid network config
inline constexpr int kCniErrTryAgainLater = 11;    // try again later
inline constexpr int kCniErrNotAvailable = 50;     // STATUS: the plugin is not available

// AppendJsonString appends s to *out as a JSON string, quotes included.
void AppendJsonString(std::string* out, const std::string& s);

// ErrorJson is `{"cniVersion":..,"code":..,"msg":..,"details":..}` and a newline.
std::string ErrorJson(const std::string& cni_version, int code, const std::string& msg, const std::string& details);

// VersionJson is the VERSION answer, `{"cniVersion":..,"supportedVersions":[...]}` and a newline.
std::string VersionJson(const std::string& cni_version);

}  // namespace podnet::cni
