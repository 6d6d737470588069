// ipset operations over one netlink engine: request encoding, reply decoding,
// ADT batching with per-entry line numbers and resume-after-failure.
// Everything here is plain C++ (no N-API): it runs on libuv workers.
#pragma once

#include <stdint.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ipset/record.h"
#include "netlink/engine.h"

namespace podnet::ipset {

struct SetHeader {
  std::string name;
  std::string typeName;
  uint8_t family = 0;
  uint8_t revision = 0;
  bool hasData = false;
  uint32_t hashsize = 0, maxelem = 0, references = 0, elements = 0, memsize = 0, bucketsize = 0;
  bool hasTimeout = false;
  uint32_t timeout = 0;
  uint32_t cadtFlags = 0;
  bool decoded = true;  // false: entries of a type podnet does not decode were skipped
};

struct CreateSpec {
  std::string name;
  std::string typeName;
  uint8_t family = 2;
  bool hasHashsize = false, hasMaxelem = false, hasTimeout = false;
  uint32_t hashsize = 0, maxelem = 0, timeout = 0;
  uint32_t cadtFlags = 0;  // WITH_COMMENT / WITH_COUNTERS
  bool exist = false;      // no NLM_F_EXCL: an identical existing set is fine
};

struct EntryFailure {
  uint32_t index;
  int error;
};

struct ListResult {
  std::vector<SetHeader> sets;  // one per set seen, in dump order
  std::vector<uint8_t> records; // entries of sets[0] (single-set dumps)
  uint32_t count = 0;
};

// Whether podnet decodes this set type's entries.
bool DecodesType(const std::string& typeName);

// Attaches what the operation was about to a kernel error.
ErrorInfo KernelError(int error, const char* command, const std::string& set);

class Session {
 public:
  explicit Session(std::unique_ptr<nl::Transport> transport, int timeoutMs)
      : engine_(std::move(transport), timeoutMs) {}

  // Lock takes the session for one operation (workers and the JS thread
  // share it). A JS peer's exchange() runs on the JS thread inside an
  // operation, and every operation of a peer's session runs there too: when
  // the lock is held then, it is held by the caller's own thread, re-entering
  // from its peer, and waiting would never end. That is refused
  // (ERR_IPSET_REENTERED) and changes nothing.
  ErrorInfo Lock(std::unique_lock<std::mutex>* lock);
  nl::Engine& engine() { return engine_; }

  ErrorInfo Protocol(uint8_t* version);
  ErrorInfo TypeRevision(const std::string& typeName, uint8_t family, uint8_t* max, uint8_t* min);
  ErrorInfo Create(const CreateSpec& spec);
  // DESTROY, FLUSH (name empty: all sets), RENAME, SWAP (name2).
  ErrorInfo WholeSetCommand(uint8_t cmd, const std::string& name, const std::string& name2, bool excl);
  // ADD or DEL of every record in [data, data+len); entry failures are
  // collected (batch index = record position) and the rest applied. A
  // failure of the whole request (missing set, ...) returns an error.
  ErrorInfo Adt(uint8_t cmd, const std::string& name, const uint8_t* data, size_t len, bool excl,
                uint32_t* applied, std::vector<EntryFailure>* failures);
  ErrorInfo Test(const std::string& name, const Record& entry, bool* member);
  // LIST dump of one set (or all when name is empty); flags select names or headers only.
  ErrorInfo List(const std::string& name, uint32_t listFlags, ListResult* out);

  // Streaming dump of one set: Start once, then Next until *done.
  ErrorInfo StartEntries(const std::string& name);
  ErrorInfo NextEntries(uint32_t maxRecords, ListResult* out, bool* done);

 private:
  size_t BeginRequest(uint8_t cmd, uint16_t flags, uint32_t seq);
  ErrorInfo AckedRequest(const char* command, const std::string& set, int* kernelError);
  ErrorInfo DumpMessage(const uint8_t* payload, size_t len, ListResult* out);
  // One chunk of the streaming dump into *out, which NextEntries empties when it fails.
  ErrorInfo NextChunk(uint32_t maxRecords, ListResult* out, bool* done);

  std::mutex mu_;
  nl::Engine engine_;
  nl::Writer w_;
  std::vector<uint32_t> offsets_;  // reused by Adt
  // Streaming dump state.
  uint32_t cursorSeq_ = 0;
  std::string cursorSet_;
  bool cursorHasHeader_ = false;
  SetHeader cursorHeader_;
};

}  // namespace podnet::ipset
