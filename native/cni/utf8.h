// UTF-8 as RFC 3629 defines it, shared by the config scanner (which refuses anything else) and the output
// writer (which replaces anything else).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>

namespace podnet::cni {

// Utf8CharLength is the length (1..4) of the well-formed UTF-8 character at p, of which avail bytes are readable
// (avail > 0), or 0 when there is none: a stray or missing continuation byte, an overlong form, a surrogate, or a
// code point past U+10FFFF.
size_t Utf8CharLength(const uint8_t* p, size_t avail);

// AppendUtf8 appends code point cp (at most U+10FFFF, not a surrogate) to *out in UTF-8.
void AppendUtf8(std::string* out, uint32_t cp);

}  // namespace podnet::cni
