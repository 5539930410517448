// OutsideText.h: the one rule for text from outside the harness (a target's events and output,
// a runtime's error strings, a debugger's stacks, compute-sanitizer's report, a --version line).
// Whatever bytes come in, what goes out is valid UTF-8 that a terminal shows as it is:
// - A byte that is not part of a valid UTF-8 sequence (RFC 3629: no overlong forms, no
//   surrogates, nothing above U+10FFFF) becomes the four characters `\xNN` (lowercase hex), so
//   no byte is lost silently.
// - A control character other than newline and tab becomes `\xNN` too (C0 and DEL), or `\u00NN`
//   (C1): an escape sequence of a target never reaches a terminal or a log viewer.
// - A line longer than the limit keeps its head, cut at a character boundary, and ends with
//   ` [... N bytes cut]` (N counts the bytes of the escaped line that were left out), within the
//   limit.
// Backslashes stay as they are, so the rule is idempotent: applied twice, it changes nothing
// more. The files the harness writes (harness/base/Json.h for JSON) hold text only through it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpufuzz {

/// The longest line of outside text the harness keeps, in bytes.
inline constexpr std::size_t kOutsideLineLimit = 4096;

/// `bytes` under the rule, its lines at most `lineLimit` bytes (at least 64).
std::string outsideText(std::string_view bytes, std::size_t lineLimit = kOutsideLineLimit);

/// `bytes` as one line under the rule: newlines escaped as well, at most `limit` bytes.
std::string outsideLine(std::string_view bytes, std::size_t limit = kOutsideLineLimit);

/// `bytes` with only the bytes that are not valid UTF-8 escaped (`\xNN`): no control character
/// escaped, no line cut. What a writer of a strict format applies to whatever it is given.
std::string validUtf8(std::string_view bytes);

/// Whether `bytes` is valid UTF-8 as RFC 3629 defines it.
bool isValidUtf8(std::string_view bytes);

}  // namespace gpufuzz
