// Outcome.h: how a sequence ended, in the classes of the sequence contract (docs/sequences.md), and
// what a file expects.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpufuzz {

enum class OutcomeClass : uint8_t {
  Pass,
  Hang,
  Spin,
  Slow,
  Crash,
  Error,
  Mismatch,
  Leak,
  /// The runtime's own checker (a validation layer, compute-sanitizer) reported a broken rule.
  Invalid,
};

/// How many classes there are: arrays indexed by OutcomeClass have this size.
inline constexpr std::size_t kOutcomeClassCount =
    static_cast<std::size_t>(OutcomeClass::Invalid) + 1;

std::string_view outcomeClassName(OutcomeClass c);
std::optional<OutcomeClass> parseOutcomeClass(std::string_view name);

/// Where a failure happened: a 1-based operation ordinal, or the release of leftovers ("end").
struct At {
  static constexpr uint32_t kEnd = 0;
  uint32_t ordinal = kEnd;
  bool isEnd() const { return ordinal == kEnd; }
  bool operator==(const At&) const = default;
};
std::string atText(At at);  // "3" or "end"

/// `# expect: CLASS [at N|end]`. `at` is absent for pass and leak, and may be absent for any
/// class (then any place matches).
struct Expectation {
  OutcomeClass cls = OutcomeClass::Pass;
  std::optional<At> at;
  bool operator==(const Expectation&) const = default;
};
std::string expectationText(const Expectation& e);  // "hang at 3", "leak", "pass"

}  // namespace gpufuzz
