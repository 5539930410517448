// CommandLine.h: the gpufuzz command line (docs/cli.md): a subcommand, its files, and the options
// of Options.def, checked against what that subcommand accepts. Bad usage is an InputError.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpufuzz {

enum class Option : uint8_t {
#define GPUFUZZ_OPTION(id, flag, takesValue, metavar, def, commands, help) id,
#include "harness/cli/Options.def"
#undef GPUFUZZ_OPTION
  Count
};

struct CommandLine {
  std::string command;  // fuzz | replay | shrink | explain | promote | merge
  std::vector<std::string> files;
  std::string asTyped;  // the command line as given, words joined by spaces
  std::array<std::optional<std::string>, static_cast<std::size_t>(Option::Count)> values;

  bool has(Option o) const { return values[static_cast<std::size_t>(o)].has_value(); }
  std::optional<std::string> get(Option o) const { return values[static_cast<std::size_t>(o)]; }
  /// A positive integer option, or `fallback`; InputError naming the option when malformed.
  uint64_t number(Option o, uint64_t fallback, uint64_t min = 1, uint64_t max = UINT64_MAX) const;
};

/// Parses argv; throws InputError for an unknown subcommand or option, a missing value, an
/// option the subcommand does not take, or a wrong number of files.
CommandLine parseCommandLine(int argc, char** argv);

/// The option's flag ("--backend").
const char* optionFlag(Option o);

/// "30s", "10m", "8h", "1h30m", "90" (seconds); InputError naming `option` otherwise (also for
/// a zero duration unless `zeroAllowed`).
std::chrono::seconds parseDuration(const std::string& text, const std::string& option = "--time",
                                   bool zeroAllowed = false);

/// The usage text: subcommands and the option table.
std::string usageText();

}  // namespace gpufuzz
