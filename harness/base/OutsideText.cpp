// OutsideText.cpp: escaping and bounding of text from outside the harness.
#include "harness/base/OutsideText.h"

#include <algorithm>
#include <cstdint>

namespace gpufuzz {

namespace {

/// The length of the valid UTF-8 sequence at the start of `s`, with its code point; 0 when the
/// first byte does not begin one (RFC 3629, section 4).
std::size_t sequenceAt(std::string_view s, char32_t& cp) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the bounds of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
    cp = b0 & 0x1f;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    cp = b0 & 0x0f;
    if (b0 == 0xe0) lo = 0xa0;  // overlong
    if (b0 == 0xed) hi = 0x9f;  // surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    cp = b0 & 0x07;
    if (b0 == 0xf0) lo = 0x90;  // overlong
    if (b0 == 0xf4) hi = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  for (std::size_t i = 1; i < n; ++i) {
    const unsigned char b = byte(i);
    if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xbf)) return 0;
    cp = (cp << 6) | (b & 0x3f);
  }
  return n;
}

void appendHex(std::string& out, const char* prefix, unsigned value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  out += prefix;
  out += kDigits[(value >> 4) & 0xf];
  out += kDigits[value & 0xf];
}

/// `bytes` with invalid bytes escaped and, with `controls`, control characters too (newline
/// kept unless `newlines` is false; tab always kept).
std::string escaped(std::string_view bytes, bool controls, bool newlines) {
  std::string out;
  out.reserve(bytes.size());
  while (!bytes.empty()) {
    char32_t cp = 0;
    const std::size_t n = sequenceAt(bytes, cp);
    if (n == 0) {
      appendHex(out, "\\x", static_cast<unsigned char>(bytes.front()));
      bytes.remove_prefix(1);
      continue;
    }
    const bool control = (cp < 0x20 && cp != '\t' && (cp != '\n' || !newlines)) || cp == 0x7f;
    if (controls && control) {
      appendHex(out, "\\x", static_cast<unsigned>(cp));
    } else if (controls && cp >= 0x80 && cp <= 0x9f) {
      appendHex(out, "\\u00", static_cast<unsigned>(cp));
    } else {
      out.append(bytes.substr(0, n));
    }
    bytes.remove_prefix(n);
  }
  return out;
}

/// Room kept at the end of a cut line for its note.
constexpr std::size_t kNoteRoom = 32;

/// `line` (valid UTF-8, no newline) within `limit` bytes.
void appendBounded(std::string& out, std::string_view line, std::size_t limit) {
  if (line.size() <= limit) {
    out.append(line);
    return;
  }
  std::size_t keep = limit - kNoteRoom;
  while (keep > 0 && (static_cast<unsigned char>(line[keep]) & 0xc0) == 0x80)
    --keep;  // not inside a character
  out.append(line.substr(0, keep));
  out += " [... " + std::to_string(line.size() - keep) + " bytes cut]";
}

std::string bounded(const std::string& text, std::size_t limit) {
  limit = std::max<std::size_t>(limit, 2 * kNoteRoom);
  std::string out;
  out.reserve(std::min(text.size(), text.size() / 2 + limit));
  std::string_view rest = text;
  while (true) {
    const std::size_t newline = rest.find('\n');
    appendBounded(out, rest.substr(0, newline), limit);
    if (newline == std::string_view::npos) break;
    out += '\n';
    rest.remove_prefix(newline + 1);
  }
  return out;
}

}  // namespace

std::string outsideText(std::string_view bytes, std::size_t lineLimit) {
  return bounded(escaped(bytes, true, true), lineLimit);
}

std::string outsideLine(std::string_view bytes, std::size_t limit) {
  return bounded(escaped(bytes, true, false), limit);
}

std::string validUtf8(std::string_view bytes) {
  if (isValidUtf8(bytes)) return std::string(bytes);
  return escaped(bytes, false, true);
}

bool isValidUtf8(std::string_view bytes) {
  while (!bytes.empty()) {
    char32_t cp = 0;
    const std::size_t n = sequenceAt(bytes, cp);
    if (n == 0) return false;
    bytes.remove_prefix(n);
  }
  return true;
}

}  // namespace gpufuzz
