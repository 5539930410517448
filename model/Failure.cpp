// Failure.cpp: the words of failures on purpose, and the mark that asks for one.
#include "model/Failure.h"

#include <charconv>

namespace gpufuzz {

std::string_view failWordName(FailWord word) {
  switch (word) {
    case FailWord::Oom:
      return "oom";
    case FailWord::HostOom:
      return "host-oom";
    case FailWord::Lost:
      return "lost";
  }
  return "?";
}

std::optional<FailWord> failWordNamed(std::string_view name) {
  for (const FailWord word : kFailWords) {
    if (failWordName(word) == name) return word;
  }
  return std::nullopt;
}

std::string failWordList() {
  std::string text;
  for (std::size_t i = 0; i < kFailWords.size(); ++i) {
    if (i > 0) text += i + 1 == kFailWords.size() ? " or " : ", ";
    text += failWordName(kFailWords[i]);
  }
  return text;
}

std::string FailWords::text() const {
  std::string out;
  for (const FailWord word : kFailWords) {
    if (!has(word)) continue;
    if (!out.empty()) out += '|';
    out += failWordName(word);
  }
  return out;
}

std::string markText(const Mark& mark) {
  std::string text = " !" + std::string(failWordName(mark.word));
  if (mark.nth != 1) text += "@" + std::to_string(mark.nth);
  return text;
}

std::string readMark(std::string_view text, Mark& mark, std::size_t& column) {
  const std::size_t at = text.find('@');
  const std::string_view word = text.substr(0, at);
  column = 0;
  const std::optional<FailWord> known = failWordNamed(word);
  if (!known) {
    return "unknown failure '" + std::string(word) + "' in a mark: expected " + failWordList();
  }
  mark.word = *known;
  mark.nth = 1;
  if (at == std::string_view::npos) return {};
  const std::string_view count = text.substr(at + 1);
  column = at + 1;
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
  if (count.empty() || ec != std::errc() || end != count.data() + count.size() || n < 1 ||
      n > kMaxMarkNth || count.front() == '+') {
    return "'" + std::string(count) + "' after '@' in a mark: expected a call count in 1.." +
           std::to_string(kMaxMarkNth);
  }
  mark.nth = static_cast<uint32_t>(n);
  return {};
}

}  // namespace gpufuzz
