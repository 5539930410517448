// Failure.h: the failures a sequence asks for on purpose (docs/failures.md). A model declares, per
// operation, the words its runtime calls may fail with (`fails:oom|host-oom`); an operation line
// of a sequence may end with one mark, `!WORD` or `!WORD@N`, that fails the N-th such call inside
// the operation. Release calls are never failed: a release that never reaches the runtime would
// leak by construction.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpufuzz {

/// What a failing call returns: device memory exhausted, host memory exhausted inside the
/// runtime, the device or context lost.
enum class FailWord : uint8_t { Oom, HostOom, Lost };

inline constexpr std::array<FailWord, 3> kFailWords = {FailWord::Oom, FailWord::HostOom,
                                                       FailWord::Lost};

/// "oom", "host-oom", "lost".
std::string_view failWordName(FailWord word);
/// The word of that name, if it is one.
std::optional<FailWord> failWordNamed(std::string_view name);
/// "oom, host-oom or lost": the vocabulary, for error messages.
std::string failWordList();

/// A set of words: what an operation declares with `fails:`.
class FailWords {
 public:
  bool empty() const { return bits_ == 0; }
  bool has(FailWord word) const { return (bits_ & bit(word)) != 0; }
  void add(FailWord word) { bits_ = static_cast<uint8_t>(bits_ | bit(word)); }
  /// "oom|host-oom", in the vocabulary's order: as `fails:` writes it.
  std::string text() const;
  bool operator==(const FailWords&) const = default;

 private:
  static uint8_t bit(FailWord word) {
    return static_cast<uint8_t>(1U << static_cast<unsigned>(word));
  }
  uint8_t bits_ = 0;
};

/// The most calls of one word a mark can count to.
inline constexpr uint32_t kMaxMarkNth = 64;

/// `!WORD@N`: the N-th runtime call inside the operation that can fail with WORD fails with it.
struct Mark {
  FailWord word = FailWord::Oom;
  uint32_t nth = 1;
  bool operator==(const Mark&) const = default;
};

/// " !oom", " !oom@3": as an operation line ends with it (N written only past 1).
std::string markText(const Mark& mark);

/// Why `text` (the token after '!', such as "oom@3") is no mark, or empty; `mark` holds it when
/// it is one. `column` is set to the 0-based offset in `text` of what is wrong.
std::string readMark(std::string_view text, Mark& mark, std::size_t& column);

}  // namespace gpufuzz
