// What the runtime handed the plugin besides stdin: the CNI_ environment (CNI_COMMAND, CNI_NETNS and the entries
// forwarded to the agent) and, opened from CNI_NETNS, the pod's network namespace as an fd.
#pragma once

#include <string>
#include <vector>

namespace podnet::cni {

// Command is CNI_COMMAND.
enum class Command { kAdd, kDel, kCheck, kStatus, kGc, kVersion, kUnknown };

// Invocation is the plugin's CNI_ environment.
struct Invocation {
  Command command = Command::kUnknown;
  std::string command_text;  // CNI_COMMAND as given ("" when unset)
  std::string netns;         // CNI_NETNS ("" when unset)
  std::vector<std::string> env;  // every CNI_ entry of environ, NAME=VALUE, in order
  std::string env_error;     // a CNI_ variable set more than once or not UTF-8, or "" when there is none
};

// CollectInvocation reads the CNI_ entries of envp (a NULL-terminated environ). An entry without '=' is no variable
// and is left out.
Invocation CollectInvocation(char* const* envp);

// CommandName is the command's CNI_COMMAND spelling ("ADD", ...), "" for kUnknown.
const char* CommandName(Command command);

// NetnsFd is the result of opening CNI_NETNS: an fd (close-on-exec), or the errno opening it failed with.
struct NetnsFd {
  int fd = -1;
  int err = 0;
};

// OpenNetns opens path O_RDONLY|O_CLOEXEC|O_NONBLOCK (a FIFO there must not block the plugin). It does not judge
// what the file is: the agent does. An empty path gives no fd and no error.
NetnsFd OpenNetns(const std::string& path);

}  // namespace podnet::cni
