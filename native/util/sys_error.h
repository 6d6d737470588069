// Errors that cross from native code to JS. Native work records plain data
// (errno, syscall, context fields) and only the JS thread turns it into an
// Error (util/js_error.h), so that the error classes live in TypeScript and
// every layer throws the same ones. No N-API here: the codecs and the engine
// include this and must link without Node (the fuzz targets in native/fuzz).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace podnet {

struct ErrorInfo {
  // "system" for plain errno failures; other kinds ("ipset", ...) are chosen
  // by the layer that reports them and map to their own JS classes. A static
  // string, not a std::string: every call on the single-add path makes and
  // drops several successful ErrorInfos, and each copied "system" into one.
  const char* kind = "system";
  int err = 0;  // positive errno (or a protocol specific positive code)
  std::string code;     // overrides the errno name when set
  std::string syscall;
  std::string message;  // overrides the derived message when set
  std::vector<std::pair<std::string, std::string>> fields;  // path, netns, set, ...

  bool failed() const { return err != 0 || !code.empty(); }
  ErrorInfo& With(std::string key, std::string value) {
    fields.emplace_back(std::move(key), std::move(value));
    return *this;
  }
};

ErrorInfo SystemError(int err, const char* syscall);

// Name of an errno value as Node spells it ("ENOENT"); "E<number>" when unknown.
std::string ErrnoName(int err);

}  // namespace podnet
