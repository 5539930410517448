// OptionTable.h: typed command-line options declared in one table, parsed once. A row names an
// option's flag, its type, its default as written on a command line, its bounds and its help.
// gpufuzz (harness/cli/Options.def) and gpufuzz-runner (harness/protocol/RunnerCommandLine.h)
// each declare their options as such rows; the parse, the bound checks, the help lines and the
// command line written back all come from the rows, so a default or a bound is written once.
//
// Every malformed value is an InputError (exit status 2) naming the option and, for a value out
// of bounds, the bounds.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace gpufuzz {

enum class OptionKind : uint8_t {
  Flag,         // no value: present or not
  Count,        // an unsigned integer within [min, max]
  Duration,     // 30s, 10m, 8h, 1h30m, 90 (seconds): seconds within [min, max]
  Choice,       // one word of the metavar's list "a|b|c"
  Text,         // any non-empty text
  Path,         // a file or folder: non-empty text
  AutoOrCount,  // `auto`, or a Count within [min, max]
};

struct OptionSpec {
  const char* flag;
  OptionKind kind;
  /// The value's name in help ("N", "DIR"); for Choice the words, "on|off".
  const char* metavar;
  /// The default as it would be written on the command line; "" when none holds (then
  /// `shownDefault` says what does instead). Parsed as a value of the row, bounds included.
  const char* def;
  /// Bounds: Count and AutoOrCount values, Duration seconds. Unused for other kinds.
  uint64_t min = 0;
  uint64_t max = UINT64_MAX;
  /// Where `def` is "": what holds when the option is not given, in words.
  const char* shownDefault = "";
  const char* help = "";
};

/// One value as parsed: its text, and its number for Count, Duration (seconds) and
/// AutoOrCount (`automatic` for auto).
struct OptionValue {
  std::string text;
  uint64_t number = 0;
  bool automatic = false;
};

/// Parses `text` as a value of `spec`; InputError naming the flag (and the bounds) otherwise.
OptionValue parseOptionValue(const OptionSpec& spec, const std::string& text);

/// The row's default, parsed; nothing when `def` is "" (a Flag's default is absent: false).
std::optional<OptionValue> optionDefault(const OptionSpec& spec);

/// "1..8", "at least 1", "0s or more"; empty where the kind has no bounds.
std::string optionBoundsText(const OptionSpec& spec);

/// The help line's tail: "[default: 40; bounds: 1..10000]", "[default: from the clock]".
/// `def` replaces the row's default text where a command has its own (may be null).
std::string optionDefaultAndBounds(const OptionSpec& spec, const char* def = nullptr);

/// "  --flag VALUE    help [default: ...; bounds: ...]\n".
std::string optionHelpLine(const OptionSpec& spec, const char* def = nullptr);

/// "30s", "10m", "8h", "1h30m", "90" (seconds); InputError naming `option` otherwise (also for
/// a zero duration unless `zeroAllowed`).
std::chrono::seconds parseDuration(const std::string& text, const std::string& option = "--time",
                                   bool zeroAllowed = false);

/// A command line read against a table: each row's value where it was given, and the operands.
struct ParsedOptions {
  std::vector<std::optional<OptionValue>> values;  // by row
  std::vector<std::string> operands;
};

/// Parses `args` (no program name) against `table`: `--flag VALUE`, `--flag=VALUE` and flags;
/// a word not starting with '-' (or "-" alone) is an operand. `accept(row)` is called for each
/// option before its value is read, to refuse one that does not apply (it throws). InputError
/// for an unknown option (naming `helpHint`), a missing value, or a value a flag does not take.
ParsedOptions parseOptions(std::span<const OptionSpec> table, const std::vector<std::string>& args,
                           const std::function<void(std::size_t row)>& accept,
                           const std::string& helpHint);

/// The words that give row `spec` the value `value` on a command line: `--flag VALUE`, or
/// `--flag` for a Flag; none for an unset value or a Flag that is off.
std::vector<std::string> optionWords(const OptionSpec& spec,
                                     const std::optional<OptionValue>& value);

}  // namespace gpufuzz
