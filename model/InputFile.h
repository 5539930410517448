// InputFile.h: the whole text of an input file (a sequence, a model), or an InputError that
// names the file and says what it was to be: a directory, a missing or unreadable file. And the
// words of its lines, which both file formats split the same way.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpufuzz {

/// `what`: "sequence file", "model file".
std::string readInputFile(const std::string& path, std::string_view what);

/// What separates the words of a line of an input file.
inline constexpr std::string_view kBlank = " \t\r";

/// A word of a line of an input file, and its column.
struct Token {
  std::string_view text;
  int column;  // 1-based, relative to the text that was split
};

/// The words of `text`, split at blanks (kBlank).
std::vector<Token> tokenize(std::string_view text);

/// `s` in single quotes, as errors cite a word.
std::string inQuotes(std::string_view s);

}  // namespace gpufuzz
