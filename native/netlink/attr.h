// Netlink attribute building and parsing, bounds-checked both ways. A parser
// that meets a truncated or overlong attribute reports it; it never stops
// silently and never reads past the bytes it was given.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

namespace podnet::nl {

constexpr uint16_t kNlaNested = 0x8000;
constexpr uint16_t kNlaNetByteorder = 0x4000;
constexpr uint16_t kNlaTypeMask = 0x3fff;
constexpr size_t kNlaHeader = 4;

inline size_t Align4(size_t n) { return (n + 3) & ~static_cast<size_t>(3); }

// Appends netlink messages and attributes to one growing byte buffer, so a
// batch of many messages is built in place and sent with one sendmsg().
class Writer {
 public:
  // What was written: valid until the next append.
  const uint8_t* data() const { return buf_.data(); }
  size_t size() const { return len_; }
  void Clear() { len_ = 0; }
  // Drops what was written after size (which must not be past size()).
  void Truncate(size_t size) { len_ = size; }
  // Appends n bytes for the caller to fill and returns where they start
  // (valid until the next append): one size check for a run of attributes
  // instead of one per attribute. The bytes are not cleared: the caller
  // writes every one of them, padding included.
  uint8_t* Append(size_t n) {
    if (buf_.size() - len_ < n) Grow(n);
    uint8_t* at = buf_.data() + len_;
    len_ += n;
    return at;
  }

  // nlmsghdr + nfgenmsg; returns the message's offset for EndMessage().
  size_t BeginMessage(uint16_t type, uint16_t flags, uint32_t seq, uint8_t family);
  // nlmsghdr + a family's own fixed header (rtmsg, ifinfomsg, ...), copied
  // from fixed and padded to 4 bytes.
  size_t BeginRawMessage(uint16_t type, uint16_t flags, uint32_t seq, const void* fixed, size_t fixedLen);
  void EndMessage(size_t offset);

  void Put(uint16_t type, const void* data, size_t len);
  void PutU8(uint16_t type, uint8_t v) { Put(type, &v, 1); }
  void PutU32(uint16_t type, uint32_t v) { Put(type, &v, 4); }
  void PutBe32(uint16_t type, uint32_t v);
  void PutString(uint16_t type, const std::string& s);  // NUL-terminated

  size_t BeginNest(uint16_t type);
  // Closes a nest; false when it grew past what nla_len (u16) can say, and
  // the caller must split its content.
  bool EndNest(size_t offset);

 private:
  void Grow(size_t n);

  // buf_ only grows, and its length is not the message's (len_ is): a vector
  // resized per attribute would zero-fill every byte before it is written, out
  // of line, on the single-add path as on 100k-entry batches.
  std::vector<uint8_t> buf_;
  size_t len_ = 0;
};

struct Attr {
  uint16_t type = 0;  // flags masked off
  const uint8_t* data = nullptr;
  uint16_t len = 0;  // payload length
  bool present() const { return data != nullptr; }
};

// Walks attributes in [data, data+len). Next() returns false at the end or on
// malformed input; error() tells which.
class AttrIter {
 public:
  AttrIter(const uint8_t* data, size_t len) : p_(data), end_(data + len) {}
  bool Next(Attr* out);
  bool error() const { return error_; }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  bool error_ = false;
};

// Indexes attributes by type into table[0..maxType]; unknown types above
// maxType are skipped (a newer kernel may send more). False on malformed input.
bool ParseAttrs(const uint8_t* data, size_t len, Attr* table, uint16_t maxType);

// Typed readers: false when the payload has the wrong size.
bool GetU8(const Attr& a, uint8_t* v);
bool GetU32(const Attr& a, uint32_t* v);
bool GetBe16(const Attr& a, uint16_t* v);
bool GetBe32(const Attr& a, uint32_t* v);
bool GetBe64(const Attr& a, uint64_t* v);
bool GetString(const Attr& a, std::string* v);  // must be NUL-terminated

}  // namespace podnet::nl
