#include "ipset/session.h"

#include <errno.h>
#include <linux/netlink.h>
#include <string.h>

#include <algorithm>

#include "ipset/constants.h"
#include "netlink/dump_result.h"
#include "netlink/session_lock.h"

namespace podnet::ipset {

// One ADT nest must stay below what nla_len (u16) can say; keep a margin for
// the message around it.
constexpr size_t kMaxAdtBytes = 65000;
constexpr uint8_t kNfprotoIpv4 = 2;

bool DecodesType(const std::string& t) { return t == "hash:ip" || t == "hash:net" || t == "hash:ip,port"; }

ErrorInfo KernelError(int error, const char* command, const std::string& set) {
  ErrorInfo info;
  info.kind = "ipset";
  info.err = error;
  info.With("command", command);
  if (!set.empty()) info.With("set", set);
  return info;
}

static ErrorInfo Malformed(const char* what) {
  ErrorInfo err = SystemError(EBADMSG, "recv");
  err.message = std::string("malformed ipset reply: ") + what;
  return err;
}

size_t Session::BeginRequest(uint8_t cmd, uint16_t flags, uint32_t seq) {
  size_t off = w_.BeginMessage(static_cast<uint16_t>(kSubsysIpset << 8 | cmd), flags, seq, kNfprotoIpv4);
  w_.PutU8(IPSET_ATTR_PROTOCOL, kProtocol);
  return off;
}

ErrorInfo Session::AckedRequest(const char* command, const std::string& set, int* kernelError) {
  uint32_t seq;
  memcpy(&seq, w_.data() + 8, 4);
  *kernelError = 0;
  return engine_.Exchange(w_.data(), w_.size(), seq, 1, [&](const nl::Ack& ack) { *kernelError = ack.error; });
}

ErrorInfo Session::Lock(std::unique_lock<std::mutex>* lock) {
  return nl::LockSession(mu_, engine_.transport(), "ERR_IPSET_REENTERED", "ipset", lock);
}

ErrorInfo Session::Protocol(uint8_t* version) {
  w_.Clear();
  uint32_t seq = engine_.ReserveSeq(1);
  w_.EndMessage(BeginRequest(IPSET_CMD_PROTOCOL, NLM_F_REQUEST | NLM_F_ACK, seq));
  int kerr = 0;
  *version = 0;
  ErrorInfo err = engine_.Exchange(
      w_.data(), w_.size(), seq, 1, [&](const nl::Ack& ack) { kerr = ack.error; },
      [&](const uint8_t* payload, size_t len) -> ErrorInfo {
        nl::Attr tb[IPSET_ATTR_CMD_MAX + 1];
        if (len < 4 || !nl::ParseAttrs(payload + 4, len - 4, tb, IPSET_ATTR_CMD_MAX)) return Malformed("PROTOCOL");
        if (!nl::GetU8(tb[IPSET_ATTR_PROTOCOL], version)) return Malformed("PROTOCOL without version");
        return ErrorInfo{};
      });
  if (err.failed()) return err;
  if (kerr != 0) return KernelError(kerr, "protocol", "");
  return ErrorInfo{};
}

ErrorInfo Session::TypeRevision(const std::string& typeName, uint8_t family, uint8_t* max, uint8_t* min) {
  w_.Clear();
  uint32_t seq = engine_.ReserveSeq(1);
  size_t off = BeginRequest(IPSET_CMD_TYPE, NLM_F_REQUEST | NLM_F_ACK, seq);
  w_.PutString(IPSET_ATTR_TYPENAME, typeName);
  w_.PutU8(IPSET_ATTR_FAMILY, family);
  w_.EndMessage(off);
  int kerr = 0;
  bool got = false;
  ErrorInfo err = engine_.Exchange(
      w_.data(), w_.size(), seq, 1, [&](const nl::Ack& ack) { kerr = ack.error; },
      [&](const uint8_t* payload, size_t len) -> ErrorInfo {
        nl::Attr tb[IPSET_ATTR_CMD_MAX + 1];
        if (len < 4 || !nl::ParseAttrs(payload + 4, len - 4, tb, IPSET_ATTR_CMD_MAX)) return Malformed("TYPE");
        if (!nl::GetU8(tb[IPSET_ATTR_REVISION], max)) return Malformed("TYPE without revision");
        *min = 0;
        if (tb[IPSET_ATTR_REVISION_MIN].present()) nl::GetU8(tb[IPSET_ATTR_REVISION_MIN], min);
        got = true;
        return ErrorInfo{};
      });
  if (err.failed()) return err;
  if (kerr != 0) return KernelError(kerr, "type", "").With("settype", typeName);
  if (!got) return Malformed("TYPE acknowledged without an answer");
  return ErrorInfo{};
}

ErrorInfo Session::Create(const CreateSpec& spec) {
  uint8_t maxRev = 0, minRev = 0;
  ErrorInfo err = TypeRevision(spec.typeName, spec.family, &maxRev, &minRev);
  if (err.failed()) {
    // A type unknown to the kernel: report it as the create that failed.
    if (strcmp(err.kind, "ipset") == 0) return KernelError(err.err, "create", spec.name).With("settype", spec.typeName);
    return err;
  }
  w_.Clear();
  uint32_t seq = engine_.ReserveSeq(1);
  uint16_t flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | (spec.exist ? 0 : NLM_F_EXCL);
  size_t off = BeginRequest(IPSET_CMD_CREATE, flags, seq);
  w_.PutString(IPSET_ATTR_SETNAME, spec.name);
  w_.PutString(IPSET_ATTR_TYPENAME, spec.typeName);
  w_.PutU8(IPSET_ATTR_REVISION, maxRev);
  w_.PutU8(IPSET_ATTR_FAMILY, spec.family);
  size_t data = w_.BeginNest(IPSET_ATTR_DATA);
  if (spec.hasHashsize) w_.PutBe32(IPSET_ATTR_HASHSIZE, spec.hashsize);
  if (spec.hasMaxelem) w_.PutBe32(IPSET_ATTR_MAXELEM, spec.maxelem);
  if (spec.hasTimeout) w_.PutBe32(IPSET_ATTR_TIMEOUT, spec.timeout);
  if (spec.cadtFlags != 0) w_.PutBe32(IPSET_ATTR_CADT_FLAGS, spec.cadtFlags);
  w_.EndNest(data);
  w_.EndMessage(off);
  int kerr = 0;
  err = AckedRequest("create", spec.name, &kerr);
  if (err.failed()) return err;
  if (kerr != 0) return KernelError(kerr, "create", spec.name).With("settype", spec.typeName);
  return ErrorInfo{};
}

static const char* CommandName(uint8_t cmd) {
  switch (cmd) {
    case IPSET_CMD_DESTROY: return "destroy";
    case IPSET_CMD_FLUSH: return "flush";
    case IPSET_CMD_RENAME: return "rename";
    case IPSET_CMD_SWAP: return "swap";
    case IPSET_CMD_ADD: return "add";
    case IPSET_CMD_DEL: return "del";
    case IPSET_CMD_TEST: return "test";
    case IPSET_CMD_LIST: return "list";
    default: return "ipset";
  }
}

ErrorInfo Session::WholeSetCommand(uint8_t cmd, const std::string& name, const std::string& name2, bool excl) {
  w_.Clear();
  uint32_t seq = engine_.ReserveSeq(1);
  size_t off = BeginRequest(cmd, NLM_F_REQUEST | NLM_F_ACK | (excl ? NLM_F_EXCL : 0), seq);
  if (!name.empty()) w_.PutString(IPSET_ATTR_SETNAME, name);
  if (!name2.empty()) w_.PutString(IPSET_ATTR_SETNAME2, name2);
  w_.EndMessage(off);
  int kerr = 0;
  ErrorInfo err = AckedRequest(CommandName(cmd), name, &kerr);
  if (err.failed()) return err;
  if (kerr != 0) {
    ErrorInfo k = KernelError(kerr, CommandName(cmd), name);
    if (!name2.empty()) k.With("set2", name2);
    return k;
  }
  return ErrorInfo{};
}

// The top-level LINENO of an echoed ADT request: the kernel overwrote it with
// the line number of the entry that failed (0 when none). The kernel writes
// it in network byte order although the attribute we sent is host order
// (checked on 6.18: entry 2 came back as 00 00 00 02).
static uint32_t EchoedLineno(const uint8_t* echo, size_t len) {
  constexpr size_t kHead = sizeof(nlmsghdr) + 4;
  if (echo == nullptr || len < kHead) return 0;
  nl::Attr tb[IPSET_ATTR_CMD_MAX + 1];
  if (!nl::ParseAttrs(echo + kHead, len - kHead, tb, IPSET_ATTR_CMD_MAX)) return 0;
  uint32_t lineno = 0;
  if (tb[IPSET_ATTR_LINENO].present()) nl::GetBe32(tb[IPSET_ATTR_LINENO], &lineno);
  return lineno;
}

ErrorInfo Session::Adt(uint8_t cmd, const std::string& name, const uint8_t* data, size_t len, bool excl,
                       uint32_t* applied, std::vector<EntryFailure>* failures) {
  *applied = 0;
  // Check every record first (a malformed buffer changes nothing) and note
  // where each starts, so encoding can resume after a failing entry. The
  // check does not decode; records are read once, while encoding, where they
  // lie: no copy of the batch, nor of any entry's comment.
  std::vector<uint32_t>& offsets = offsets_;
  offsets.clear();
  RecordReader reader(data, len);
  EntryView r;
  {
    bool bad = false;
    size_t at = reader.offset();
    while (reader.Skip(&bad)) {
      offsets.push_back(static_cast<uint32_t>(at));
      at = reader.offset();
    }
    if (bad || len > UINT32_MAX) {
      ErrorInfo err = SystemError(EINVAL, "encode");
      err.message = "malformed entry records";
      return err;
    }
  }
  uint32_t next = 0;
  const uint32_t total = static_cast<uint32_t>(offsets.size());
  // One ADT message per sendmsg: the kernel processes a message inside
  // sendmsg anyway, and sending one at a time keeps the entries' order exact
  // when an entry fails and the rest of its message is sent again.
  while (next < total) {
    w_.Clear();
    uint32_t seq = engine_.ReserveSeq(1);
    size_t off = BeginRequest(cmd, NLM_F_REQUEST | NLM_F_ACK | (excl ? NLM_F_EXCL : 0), seq);
    w_.PutString(IPSET_ATTR_SETNAME, name);
    w_.PutU32(IPSET_ATTR_LINENO, 0);
    size_t adt = w_.BeginNest(IPSET_ATTR_ADT);
    uint32_t first = next;
    reader.Seek(next < total ? offsets[next] : len);
    bool bad = false;
    while (next < total && reader.NextView(&r, &bad)) {
      size_t before = w_.size();
      PutEntryData(w_, r, next + 1);
      if (w_.size() - adt > kMaxAdtBytes && next > first) {
        w_.Truncate(before);
        break;
      }
      next++;
    }
    w_.EndNest(adt);
    w_.EndMessage(off);

    int kerr = 0;
    uint32_t lineno = 0;
    ErrorInfo err = engine_.Exchange(w_.data(), w_.size(), seq, 1, [&](const nl::Ack& ack) {
      kerr = ack.error;
      if (kerr != 0) lineno = EchoedLineno(ack.echo, ack.echoLen);
    });
    if (err.failed()) return err.With("set", name);
    if (kerr == 0) {
      *applied += next - first;
      continue;
    }
    if (lineno == 0 || lineno - 1 < first || lineno - 1 >= next) {
      // Not an entry's failure: the request as a whole was refused.
      return KernelError(kerr, CommandName(cmd), name);
    }
    uint32_t failed = lineno - 1;
    *applied += failed - first;
    failures->push_back({failed, kerr});
    next = failed + 1;  // entries after the failing one were not applied: send them again
  }
  return ErrorInfo{};
}

ErrorInfo Session::Test(const std::string& name, const Record& entry, bool* member) {
  w_.Clear();
  uint32_t seq = engine_.ReserveSeq(1);
  size_t off = BeginRequest(IPSET_CMD_TEST, NLM_F_REQUEST | NLM_F_ACK, seq);
  w_.PutString(IPSET_ATTR_SETNAME, name);
  PutEntryData(w_, entry, 0);
  w_.EndMessage(off);
  int kerr = 0;
  ErrorInfo err = AckedRequest("test", name, &kerr);
  if (err.failed()) return err.With("set", name);
  *member = kerr == 0;
  if (kerr != 0 && kerr != IPSET_ERR_EXIST) return KernelError(kerr, "test", name);
  return ErrorInfo{};
}

static void ParseHeaderData(const nl::Attr& a, SetHeader* h) {
  nl::Attr tb[IPSET_ATTR_DATA_MAX + 1];
  if (!nl::ParseAttrs(a.data, a.len, tb, IPSET_ATTR_DATA_MAX)) return;
  h->hasData = true;
  nl::GetBe32(tb[IPSET_ATTR_HASHSIZE], &h->hashsize);
  nl::GetBe32(tb[IPSET_ATTR_MAXELEM], &h->maxelem);
  nl::GetBe32(tb[IPSET_ATTR_REFERENCES], &h->references);
  nl::GetBe32(tb[IPSET_ATTR_ELEMENTS], &h->elements);
  nl::GetBe32(tb[IPSET_ATTR_MEMSIZE], &h->memsize);
  nl::GetBe32(tb[IPSET_ATTR_CADT_FLAGS], &h->cadtFlags);
  uint8_t bucket = 0;
  if (nl::GetU8(tb[IPSET_ATTR_BUCKETSIZE], &bucket)) h->bucketsize = bucket;
  if (tb[IPSET_ATTR_TIMEOUT].present()) h->hasTimeout = nl::GetBe32(tb[IPSET_ATTR_TIMEOUT], &h->timeout);
}

ErrorInfo Session::DumpMessage(const uint8_t* payload, size_t len, ListResult* out) {
  nl::Attr tb[IPSET_ATTR_CMD_MAX + 1];
  if (len < 4 || !nl::ParseAttrs(payload + 4, len - 4, tb, IPSET_ATTR_CMD_MAX)) return Malformed("LIST message");
  std::string setName;
  if (!nl::GetString(tb[IPSET_ATTR_SETNAME], &setName)) return Malformed("LIST message without set name");
  // The kernel's set names are 1 to 31 bytes, as podnet takes them back.
  if (setName.empty() || setName.size() > kMaxNameLen) return Malformed("LIST message with a set name of a bad length");
  if (tb[IPSET_ATTR_TYPENAME].present() || out->sets.empty() || out->sets.back().name != setName) {
    SetHeader h;
    h.name = setName;
    nl::GetString(tb[IPSET_ATTR_TYPENAME], &h.typeName);
    nl::GetU8(tb[IPSET_ATTR_FAMILY], &h.family);
    nl::GetU8(tb[IPSET_ATTR_REVISION], &h.revision);
    if (tb[IPSET_ATTR_DATA].present()) ParseHeaderData(tb[IPSET_ATTR_DATA], &h);
    h.decoded = DecodesType(h.typeName);
    out->sets.push_back(std::move(h));
  }
  SetHeader& h = out->sets.back();
  if (!tb[IPSET_ATTR_ADT].present() || out->sets.size() > 1) return ErrorInfo{};
  if (!h.decoded) return ErrorInfo{};
  nl::AttrIter it(tb[IPSET_ATTR_ADT].data, tb[IPSET_ATTR_ADT].len);
  nl::Attr a;
  Record r;
  while (it.Next(&a)) {
    if (a.type != IPSET_ATTR_DATA) continue;
    if (!ParseEntryAttrs(a.data, a.len, h.family, &r)) return Malformed("entry");
    AppendRecord(&out->records, r);
    out->count++;
  }
  if (it.error()) return Malformed("ADT");
  return ErrorInfo{};
}

ErrorInfo Session::List(const std::string& name, uint32_t listFlags, ListResult* out) {
  w_.Clear();
  uint32_t seq = engine_.ReserveSeq(1);
  size_t off = BeginRequest(IPSET_CMD_LIST, NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP, seq);
  if (!name.empty()) w_.PutString(IPSET_ATTR_SETNAME, name);
  if (listFlags != 0) w_.PutBe32(IPSET_ATTR_FLAGS, listFlags);
  w_.EndMessage(off);
  return nl::EmptyOnFailure([&] { *out = ListResult{}; }, [&]() -> ErrorInfo {
    int kerr = 0;
    ErrorInfo err = engine_.Dump(w_.data(), w_.size(), seq, &kerr, [&](const uint8_t* p, size_t n) { return DumpMessage(p, n, out); });
    if (err.failed()) return err.With("set", name);
    if (kerr != 0) return KernelError(kerr, "list", name);
    return ErrorInfo{};
  });
}

ErrorInfo Session::StartEntries(const std::string& name) {
  w_.Clear();
  cursorSeq_ = engine_.ReserveSeq(1);
  cursorSet_ = name;
  cursorHasHeader_ = false;
  size_t off = BeginRequest(IPSET_CMD_LIST, NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP, cursorSeq_);
  w_.PutString(IPSET_ATTR_SETNAME, name);
  w_.EndMessage(off);
  ErrorInfo err = engine_.StartDump(w_.data(), w_.size(), cursorSeq_);
  return err.failed() ? err.With("set", name) : err;
}

ErrorInfo Session::NextEntries(uint32_t maxRecords, ListResult* out, bool* done) {
  // The chunks handed on before stay handed on; a failed one is not.
  return nl::EmptyOnFailure([&] { *out = ListResult{}; }, [&] { return NextChunk(maxRecords, out, done); });
}

ErrorInfo Session::NextChunk(uint32_t maxRecords, ListResult* out, bool* done) {
  *done = false;
  // Room for the chunk up front (records of short comments are 56-64 bytes):
  // growing a vector of half a megabyte step by step copies it many times.
  out->records.reserve(std::min<size_t>(maxRecords, 16384) * 64);
  // Continuation messages carry no header: decode them against the one seen first.
  if (cursorHasHeader_) out->sets.push_back(cursorHeader_);
  while (!*done && out->count < maxRecords) {
    int kerr = 0;
    ErrorInfo err = engine_.NextDumpDatagram(cursorSeq_, &kerr, done,
                                             [&](const uint8_t* p, size_t n) { return DumpMessage(p, n, out); });
    if (err.failed()) return err.With("set", cursorSet_);
    if (kerr != 0) return KernelError(kerr, "list", cursorSet_);
    if (!cursorHasHeader_ && !out->sets.empty()) {
      cursorHeader_ = out->sets.front();
      cursorHasHeader_ = true;
    }
  }
  return ErrorInfo{};
}

}  // namespace podnet::ipset
