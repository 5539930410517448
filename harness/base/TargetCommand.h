// TargetCommand.h: the program `--target "CMD ARGS..."` names (docs/target.md): its words, split as
// a POSIX shell splits words (quotes and backslashes; no expansion, no shell run), and the one line
// that writes them back so that splitting it again gives the same words (the `target` directive of
// a finding's minimal.seq, stats.json, reports).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpufuzz {

struct TargetCommand {
  std::vector<std::string> words;  // the program, then its arguments
  std::string version;             // what `CMD ARGS... --version` printed first, if it answered
  bool empty() const { return words.empty(); }
  /// The words as one shell-quoted line.
  std::string text() const;
};

/// Splits `text` as a POSIX shell splits words: blanks separate words; '...' keeps everything
/// literally; "..." keeps everything but a backslash before $ ` " \ or newline; a backslash
/// outside quotes keeps the next character. InputError (naming `what`, e.g. "--target") for an
/// unterminated quote, a trailing backslash or no words at all.
std::vector<std::string> splitShellWords(std::string_view text, std::string_view what);

/// `words` as one line a shell (and splitShellWords) reads back as the same words.
std::string shellQuoted(const std::vector<std::string>& words);

}  // namespace gpufuzz
