#include "cni/invocation.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "cni/utf8.h"

namespace podnet::cni {

namespace {

constexpr struct {
  Command command;
  const char* name;
} kCommands[] = {
    {Command::kAdd, "ADD"},       {Command::kDel, "DEL"}, {Command::kCheck, "CHECK"},
    {Command::kStatus, "STATUS"}, {Command::kGc, "GC"},   {Command::kVersion, "VERSION"},
};

bool IsUtf8(const char* text) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(text);
  size_t left = strlen(text);
  while (left > 0) {
    size_t n = Utf8CharLength(p, left);
    if (n == 0) return false;
    p += n;
    left -= n;
  }
  return true;
}

Command ParseCommand(const std::string& text) {
  for (const auto& known : kCommands) {
    if (text == known.name) return known.command;
  }
  return Command::kUnknown;
}

}  // namespace

const char* CommandName(Command command) {
  for (const auto& known : kCommands) {
    if (known.command == command) return known.name;
  }
  return "";
}

Invocation CollectInvocation(char* const* envp) {
  Invocation inv;
  std::vector<std::string> names;
  for (char* const* e = envp; e && *e; ++e) {
    const char* entry = *e;
    if (strncmp(entry, "CNI_", 4) != 0) continue;
    const char* eq = strchr(entry, '=');
    if (!eq) continue;
    std::string name(entry, eq - entry);
    // Two values for one name would let the plugin (first wins, as getenv) and the agent disagree on CNI_COMMAND
    // or CNI_NETNS: such an environment is refused as invalid.
    for (const std::string& seen : names) {
      if (seen == name && inv.env_error.empty()) inv.env_error = name + " is set more than once";
    }
    // The agent reads entries as UTF-8 text and drops a request that is not: refused here, where the error can
    // name the variable.
    if (!IsUtf8(entry) && inv.env_error.empty()) inv.env_error = name + " is not UTF-8";
    names.push_back(name);
    inv.env.emplace_back(entry);
    if (name == "CNI_COMMAND" && inv.command_text.empty()) inv.command_text = eq + 1;
    if (name == "CNI_NETNS" && inv.netns.empty()) inv.netns = eq + 1;
  }
  inv.command = ParseCommand(inv.command_text);
  return inv;
}

NetnsFd OpenNetns(const std::string& path) {
  NetnsFd result;
  if (path.empty()) return result;
  int fd;
  do {
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) result.err = errno;
  else result.fd = fd;
  return result;
}

}  // namespace podnet::cni
