// TargetCommand.cpp: shell word splitting and quoting for --target.
#include "harness/base/TargetCommand.h"

#include "base/InputError.h"

namespace gpufuzz {

std::vector<std::string> splitShellWords(std::string_view text, std::string_view what) {
  std::vector<std::string> words;
  std::string word;
  bool inWord = false;
  const auto fail = [&](const std::string& why) {
    throw InputError(std::string(what) + ": " + why + " in '" + std::string(text) + "'");
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (inWord) words.push_back(std::move(word));
      word.clear();
      inWord = false;
      continue;
    }
    inWord = true;
    if (c == '\\') {
      if (++i == text.size()) fail("a backslash at the end");
      if (text[i] != '\n') word.push_back(text[i]);  // backslash-newline joins lines
    } else if (c == '\'') {
      const std::size_t close = text.find('\'', i + 1);
      if (close == std::string_view::npos) fail("an unterminated single quote");
      word.append(text.substr(i + 1, close - i - 1));
      i = close;
    } else if (c == '"') {
      for (++i;; ++i) {
        if (i == text.size()) fail("an unterminated double quote");
        if (text[i] == '"') break;
        if (text[i] == '\\' && i + 1 < text.size() &&
            std::string_view("$`\"\\\n").find(text[i + 1]) != std::string_view::npos) {
          if (text[++i] != '\n') word.push_back(text[i]);
          continue;
        }
        word.push_back(text[i]);
      }
    } else {
      word.push_back(c);
    }
  }
  if (inWord) words.push_back(std::move(word));
  if (words.empty()) fail("no program named");
  return words;
}

std::string shellQuoted(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& w : words) {
    if (!line.empty()) line.push_back(' ');
    const bool plain = !w.empty() && w.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyz"
                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789_-+=/.,:@%") == std::string::npos;
    if (plain) {
      line += w;
      continue;
    }
    line.push_back('\'');
    for (const char c : w) {
      if (c == '\'') {
        line += "'\\''";
      } else {
        line.push_back(c);
      }
    }
    line.push_back('\'');
  }
  return line;
}

std::string TargetCommand::text() const {
  return shellQuoted(words);
}

}  // namespace gpufuzz
