// podnet-cni: the chained CNI plugin the container runtime executes. It answers VERSION itself and forwards every
// other invocation (its CNI_ environment, its stdin, CNI_NETNS as an fd) to the podnet agent's CniServer over
// SOCK_SEQPACKET (docs/cni-protocol.md), then reproduces the agent's stdout, stderr and exit status.
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "cni/cni_output.h"
#include "cni/config_scan.h"
#include "cni/deadline.h"
#include "cni/exchange.h"
#include "cni/invocation.h"
#include "cni/plugin_config.h"
#include "cni/std_streams.h"
#include "cni/wire.h"

extern char** environ;

namespace podnet::cni {
namespace {

// An answer in hand is written out even when it arrived just before the deadline: the output gets at least this.
constexpr uint32_t kOutputGraceMs = 1000;

bool Lenient(Command command) {
  return command == Command::kDel || command == Command::kGc;
}

// Plugin carries one invocation from start to exit status.
class Plugin {
 public:
  Plugin(int64_t start_ns, Invocation inv) : start_ns_(start_ns), inv_(std::move(inv)) {}

  int Run() {
    // stdin comes before the config's timeoutMs is known: it gets the default.
    std::string config;
    int read_err = 0;
    ReadOutcome read = ReadInput(STDIN_FILENO, kMaxConfig, Deadline(start_ns_, kDefaultTimeoutMs), &config, &read_err);
    ConfigKeys keys;
    std::string scan_error;
    bool scanned = read == ReadOutcome::kComplete &&
                   ScanConfig(reinterpret_cast<const uint8_t*>(config.data()), config.size(), &keys, &scan_error);
    cni_version_ = scanned ? EchoedCniVersion(keys) : kDefaultCniVersion;

    if (inv_.command == Command::kVersion) return Print(STDOUT_FILENO, VersionJson(cni_version_), 0);
    if (inv_.command == Command::kUnknown) {
      std::string got = inv_.command_text.empty() ? "CNI_COMMAND is not set" : "CNI_COMMAND is '" + inv_.command_text + "'";
      return Refuse(kCniErrInvalidEnv, "invalid CNI_COMMAND", got + "; expected ADD, DEL, CHECK, STATUS, GC or VERSION");
    }
    switch (read) {
      case ReadOutcome::kComplete:
        break;
      case ReadOutcome::kTooLarge:
        return Refuse(kCniErrDecode, "failed to decode the network config",
                      "the config on stdin is over " + std::to_string(kMaxConfig) + " bytes");
      case ReadOutcome::kTimedOut:
        return Refuse(kCniErrIo, "failed to read the network config from stdin",
                      "stdin did not end within " + std::to_string(kDefaultTimeoutMs) + " ms");
      case ReadOutcome::kFailed:
        return Refuse(kCniErrIo, "failed to read the network config from stdin", ErrnoText(read_err));
    }
    if (!scanned) return Refuse(kCniErrDecode, "failed to decode the network config", scan_error);
    PluginConfig settings;
    std::string config_error;
    if (!ResolvePluginConfig(keys, &settings, &config_error)) {
      return Refuse(kCniErrInvalidConfig, "invalid network config", config_error);
    }
    if (!inv_.env_error.empty()) return Refuse(kCniErrInvalidEnv, "invalid CNI environment", inv_.env_error);
    return Forward(settings, config);
  }

 private:
  int Forward(const PluginConfig& settings, const std::string& config) {
    Deadline deadline(start_ns_, settings.timeout_ms);
    RequestHeader header;
    header.stdin_length = static_cast<uint32_t>(config.size());
    header.env = inv_.env;
    NetnsFd netns = OpenNetns(inv_.netns);
    header.has_netns_fd = netns.fd >= 0;
    header.netns_errno = netns.err;
    std::vector<uint8_t> encoded;
    std::string encode_error;
    if (!EncodeRequestHeader(header, &encoded, &encode_error)) {
      if (netns.fd >= 0) close(netns.fd);
      return Refuse(kCniErrInvalidEnv, "invalid CNI environment", encode_error);
    }
    AnswerReader answer;
    ExchangeFailure failure;
    bool answered = Exchange(settings.socket_path, deadline, settings.timeout_ms, netns.fd, encoded, config, &answer,
                             &failure);
    if (netns.fd >= 0) close(netns.fd);
    if (!answered) {
      int code = inv_.command == Command::kStatus ? kCniErrNotAvailable : kCniErrTryAgainLater;
      return Refuse(code, "podnet agent not reachable at " + settings.socket_path + ": " + failure.reason,
                    failure.details);
    }
    Deadline output = Later(deadline);
    int err = 0;
    if (!WriteOutput(STDOUT_FILENO, answer.stdout_bytes(), output, &err) ||
        !WriteOutput(STDERR_FILENO, answer.stderr_bytes(), output, &err)) {
      WriteOutput(STDERR_FILENO, "podnet-cni: writing the agent's answer: " + ErrnoText(err) + "\n", output, &err);
      return 1;
    }
    return static_cast<int>(answer.header().exit_status);
  }

  // Refuse ends an invocation the plugin answers itself: a CNI error on stdout and exit 1, but for DEL and GC,
  // which must not fail, a line on stderr and exit 0.
  int Refuse(int code, const std::string& msg, const std::string& details) {
    if (Lenient(inv_.command)) {
      std::string line = std::string("podnet-cni: ") + CommandName(inv_.command) + ": " + msg + ": " + details +
                         " (exiting 0: " + CommandName(inv_.command) + " does not fail)\n";
      return Print(STDERR_FILENO, line, 0);
    }
    return Print(STDOUT_FILENO, ErrorJson(cni_version_, code, msg, details), 1);
  }

  int Print(int fd, const std::string& text, int status) {
    int err = 0;
    WriteOutput(fd, text, Deadline(NowNs(), kOutputGraceMs), &err);
    return status;
  }

  Deadline Later(const Deadline& deadline) const {
    Deadline grace(NowNs(), kOutputGraceMs);
    return grace.RemainingMs() > deadline.RemainingMs() ? grace : deadline;
  }

  static std::string ErrnoText(int err) {
    return std::string(strerror(err));
  }

  int64_t start_ns_;
  Invocation inv_;
  std::string cni_version_ = kDefaultCniVersion;
};

}  // namespace
}  // namespace podnet::cni

int main() {
  int64_t start = podnet::cni::NowNs();
  // A peer gone mid-write is an error return (EPIPE), never the end of the plugin.
  signal(SIGPIPE, SIG_IGN);
  podnet::cni::EnsureStandardFds();
  podnet::cni::Plugin plugin(start, podnet::cni::CollectInvocation(environ));
  return plugin.Run();
}
