// Outcome.cpp: names of outcome classes and the text of expectations.
#include "model/Outcome.h"

#include <array>

namespace gpufuzz {
namespace {

// In OutcomeClass order.
constexpr std::array<std::string_view, kOutcomeClassCount> kClassNames = {
    "pass", "hang", "spin", "slow", "crash", "error", "mismatch", "leak", "invalid"};

}  // namespace

std::string_view outcomeClassName(OutcomeClass c) {
  return kClassNames.at(static_cast<size_t>(c));
}

std::optional<OutcomeClass> parseOutcomeClass(std::string_view name) {
  for (size_t i = 0; i < kClassNames.size(); ++i) {
    if (kClassNames[i] == name) return static_cast<OutcomeClass>(i);
  }
  return std::nullopt;
}

std::string atText(At at) {
  return at.isEnd() ? "end" : std::to_string(at.ordinal);
}

std::string expectationText(const Expectation& e) {
  std::string text(outcomeClassName(e.cls));
  if (e.at) text += " at " + atText(*e.at);
  return text;
}

}  // namespace gpufuzz
