#include "cni/config_scan.h"

#include <string.h>

#include <vector>

#include "cni/utf8.h"

namespace podnet::cni {

namespace {

constexpr uint32_t kReplacement = 0xfffd;

// Scanner walks the document once. Nesting lives in stack_ (one byte per open object or array), never in the call
// stack, so a deeply nested document costs memory proportional to its size and nothing more.
class Scanner {
 public:
  Scanner(const uint8_t* data, size_t len) : begin_(data), p_(data), end_(data + len) {}

  bool Run(ConfigKeys* keys, std::string* error) {
    bool ok = Document(keys);
    if (!ok) *error = error_;
    return ok;
  }

 private:
  enum class State { kValue, kKey, kAfterValue };

  bool Document(ConfigKeys* keys) {
    SkipWhitespace();
    if (p_ == end_) return Fail("expected a JSON object, found the end of the input");
    if (*p_ != '{') return Fail("expected a JSON object");
    ScannedValue* capture = nullptr;
    std::string key;
    State state = State::kValue;
    for (;;) {
      switch (state) {
        case State::kValue: {
          ScannedValue* into = capture;
          capture = nullptr;
          if (!Value(into, &state)) return false;
          break;
        }
        case State::kKey: {
          SkipWhitespace();
          if (p_ == end_ || *p_ != '"') return Fail("expected a string as the object key");
          bool top = stack_.size() == 1;
          key.clear();
          if (!String(top ? &key : nullptr)) return false;
          SkipWhitespace();
          if (p_ == end_ || *p_ != ':') return Fail("expected ':' after the object key");
          ++p_;
          if (top) capture = Pick(keys, key);
          state = State::kValue;
          break;
        }
        case State::kAfterValue: {
          SkipWhitespace();
          if (stack_.empty()) {
            if (p_ != end_) return Fail("unexpected bytes after the JSON object");
            return true;
          }
          if (p_ == end_) return Fail("unexpected end of the input inside an object or array");
          uint8_t c = *p_;
          uint8_t open = stack_.back();
          if (c == ',') {
            ++p_;
            state = open == '{' ? State::kKey : State::kValue;
          } else if ((c == '}' && open == '{') || (c == ']' && open == '[')) {
            ++p_;
            stack_.pop_back();
          } else {
            return Fail(open == '{' ? "expected ',' or '}' in an object" : "expected ',' or ']' in an array");
          }
          break;
        }
      }
    }
  }

  static ScannedValue* Pick(ConfigKeys* keys, const std::string& key) {
    if (key == "cniVersion") return &keys->cni_version;
    if (key == "socketPath") return &keys->socket_path;
    if (key == "timeoutMs") return &keys->timeout_ms;
    return nullptr;
  }

  // Value scans one value; an object or array is only opened here (its members are the caller's next states).
  bool Value(ScannedValue* into, State* next) {
    SkipWhitespace();
    if (p_ == end_) return Fail("expected a value, found the end of the input");
    if (into) {
      into->kind = JsonKind::kOther;
      into->text.clear();
    }
    switch (*p_) {
      case '{':
      case '[': {
        uint8_t open = *p_++;
        stack_.push_back(open);
        SkipWhitespace();
        if (p_ != end_ && *p_ == (open == '{' ? '}' : ']')) {
          ++p_;
          stack_.pop_back();
          *next = State::kAfterValue;
        } else {
          *next = open == '{' ? State::kKey : State::kValue;
        }
        return true;
      }
      case '"':
        if (into) into->kind = JsonKind::kString;
        *next = State::kAfterValue;
        return String(into ? &into->text : nullptr);
      case 't':
        *next = State::kAfterValue;
        return Literal("true");
      case 'f':
        *next = State::kAfterValue;
        return Literal("false");
      case 'n':
        *next = State::kAfterValue;
        return Literal("null");
      default:
        if (into) into->kind = JsonKind::kNumber;
        *next = State::kAfterValue;
        return Number(into ? &into->text : nullptr);
    }
  }

  bool Literal(const char* word) {
    size_t n = strlen(word);
    if (static_cast<size_t>(end_ - p_) < n || memcmp(p_, word, n) != 0) return Fail("invalid literal");
    p_ += n;
    return true;
  }

  bool Digits() {
    const uint8_t* start = p_;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return p_ != start;
  }

  bool Number(std::string* out) {
    const uint8_t* start = p_;
    if (*p_ == '-') ++p_;
    if (p_ == end_) return Fail("expected digits in a number");
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      Digits();
    } else {
      return Fail(p_ == start ? "expected a value" : "expected digits in a number");
    }
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      if (!Digits()) return Fail("expected digits after the decimal point");
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!Digits()) return Fail("expected digits in the exponent");
    }
    if (out) out->assign(reinterpret_cast<const char*>(start), p_ - start);
    return true;
  }

  // String scans a string starting at its opening quote, decoding it into out when out is not null.
  bool String(std::string* out) {
    ++p_;
    for (;;) {
      if (p_ == end_) return Fail("unterminated string");
      uint8_t c = *p_;
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c == '\\') {
        if (!Escape(out)) return false;
      } else if (c < 0x20) {
        return Fail("unescaped control character in a string");
      } else if (c < 0x80) {
        if (out) out->push_back(static_cast<char>(c));
        ++p_;
      } else if (!Utf8Sequence(out)) {
        return false;
      }
    }
  }

  // Hex4 reads four hex digits at at, without moving.
  bool Hex4(const uint8_t* at, uint32_t* value) const {
    if (end_ - at < 4) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      uint8_t c = at[i];
      uint32_t d;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else return false;
      v = v << 4 | d;
    }
    *value = v;
    return true;
  }

  bool Escape(std::string* out) {
    ++p_;
    if (p_ == end_) return Fail("unterminated escape in a string");
    uint8_t c = *p_++;
    char plain;
    switch (c) {
      case '"': plain = '"'; break;
      case '\\': plain = '\\'; break;
      case '/': plain = '/'; break;
      case 'b': plain = '\b'; break;
      case 'f': plain = '\f'; break;
      case 'n': plain = '\n'; break;
      case 'r': plain = '\r'; break;
      case 't': plain = '\t'; break;
      case 'u': {
        uint32_t cp;
        if (!Hex4(p_, &cp)) return Fail("expected four hex digits after \\u");
        p_ += 4;
        if (cp >= 0xd800 && cp <= 0xdbff) {
          // A high surrogate pairs with an immediately following low one; alone, it is valid JSON that names no
          // character, and decodes as U+FFFD as Go's encoding/json decodes it.
          uint32_t low;
          if (end_ - p_ >= 6 && p_[0] == '\\' && p_[1] == 'u' && Hex4(p_ + 2, &low) && low >= 0xdc00 && low <= 0xdfff) {
            p_ += 6;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          } else {
            cp = kReplacement;
          }
        } else if (cp >= 0xdc00 && cp <= 0xdfff) {
          cp = kReplacement;
        }
        if (out) AppendUtf8(out, cp);
        return true;
      }
      default:
        --p_;
        return Fail("invalid escape in a string");
    }
    if (out) out->push_back(plain);
    return true;
  }

  // Utf8Sequence takes one multi-byte UTF-8 character, or fails on anything that is not well-formed UTF-8.
  bool Utf8Sequence(std::string* out) {
    size_t n = Utf8CharLength(p_, static_cast<size_t>(end_ - p_));
    if (n == 0) return Fail("invalid UTF-8 in a string");
    if (out) out->append(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return true;
  }

  void SkipWhitespace() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }

  bool Fail(const char* what) {
    error_ = std::string(what) + " at byte " + std::to_string(p_ - begin_);
    return false;
  }

  const uint8_t* begin_;
  const uint8_t* p_;
  const uint8_t* end_;
  std::vector<uint8_t> stack_;
  std::string error_;
};

}  // namespace

bool ScanConfig(const uint8_t* data, size_t len, ConfigKeys* keys, std::string* error) {
  *keys = ConfigKeys{};
  return Scanner(data, len).Run(keys, error);
}

}  // namespace podnet::cni
