// CommandLine.h: the gpufuzz command line (docs/cli.md): a subcommand, its files, and the options
// of Options.def, parsed once into typed values and checked against what that subcommand accepts
// and against each option's bounds. Bad usage is an InputError (exit status 2).
//
// A command reads an option as `cl.value<Option::Runs>()`: its type is the row's (bool for a
// Flag, uint64_t for a Count, seconds for a Duration, std::string for a Choice, Text or Path,
// std::optional<uint64_t> for auto|N with nullopt for auto), the value given or else the
// subcommand's default from the table; wrapped in std::optional where the row has no default.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "harness/base/OptionTable.h"
#include "model/Operation.h"

namespace gpufuzz {

enum class Option : uint8_t {
#define GPUFUZZ_OPTION(id, flag, kind, metavar, def, min, max, shown, commands, help) id,
#include "harness/cli/Options.def"
#undef GPUFUZZ_OPTION
  Count
};

/// The C++ type of an option's value by its kind.
template <OptionKind K>
struct OptionKindType {
  using Type = std::string;  // Choice, Text, Path
};
template <>
struct OptionKindType<OptionKind::Flag> {
  using Type = bool;
};
template <>
struct OptionKindType<OptionKind::Count> {
  using Type = uint64_t;
};
template <>
struct OptionKindType<OptionKind::Duration> {
  using Type = std::chrono::seconds;
};
template <>
struct OptionKindType<OptionKind::AutoOrCount> {
  using Type = std::optional<uint64_t>;
};

/// The kind of option O and the type `value<O>()` returns.
template <Option O>
struct OptionType;
#define GPUFUZZ_OPTION(id, flag, kind, metavar, def, min, max, shown, commands, help) \
  template <>                                                                         \
  struct OptionType<Option::id> {                                                     \
    static constexpr OptionKind kKind = OptionKind::kind;                             \
    static constexpr bool kHasDefault = def[0] != '\0' || kKind == OptionKind::Flag;  \
    using Value = OptionKindType<kKind>::Type;                                        \
    using Type = std::conditional_t<kHasDefault, Value, std::optional<Value>>;        \
  };
#include "harness/cli/Options.def"
#undef GPUFUZZ_OPTION

struct CommandLine {
  std::string command;  // fuzz | replay | shrink | explain | promote | merge | ...
  std::vector<std::string> files;
  std::string asTyped;  // the command line as given, words joined by spaces
  /// The values given on the command line, by option.
  std::array<std::optional<OptionValue>, static_cast<std::size_t>(Option::Count)> values;
  /// The subcommand's defaults from the table, by option (unset where none holds).
  std::array<std::optional<OptionValue>, static_cast<std::size_t>(Option::Count)> defaults;

  /// Whether the option was given.
  bool has(Option o) const { return values[static_cast<std::size_t>(o)].has_value(); }
  /// The option's text as given; nothing when not given.
  std::optional<std::string> get(Option o) const {
    const auto& v = values[static_cast<std::size_t>(o)];
    return v ? std::optional(v->text) : std::nullopt;
  }

  /// The typed value: as given, else the subcommand's default.
  template <Option O>
  typename OptionType<O>::Type value() const {
    using T = OptionType<O>;
    const std::size_t i = static_cast<std::size_t>(O);
    const std::optional<OptionValue>& v = values[i] ? values[i] : defaults[i];
    if constexpr (T::kKind == OptionKind::Flag) {
      return values[i].has_value();
    } else if constexpr (T::kHasDefault) {
      return typed<T::kKind>(*v);
    } else {
      if (!v) return std::nullopt;
      return typed<T::kKind>(*v);
    }
  }

 private:
  template <OptionKind K>
  static typename OptionKindType<K>::Type typed(const OptionValue& v) {
    if constexpr (K == OptionKind::Count) {
      return v.number;
    } else if constexpr (K == OptionKind::Duration) {
      return std::chrono::seconds(static_cast<int64_t>(v.number));
    } else if constexpr (K == OptionKind::AutoOrCount) {
      return v.automatic ? std::nullopt : std::optional<uint64_t>(v.number);
    } else {
      return v.text;
    }
  }
};

/// Parses argv; throws InputError for an unknown subcommand or option, a missing or malformed
/// value, a value out of its bounds, an option the subcommand does not take, or a wrong number
/// of files.
CommandLine parseCommandLine(int argc, char** argv);
/// The same for the words after the program's name (asTyped then begins with "gpufuzz").
CommandLine parseCommandLine(const std::vector<std::string>& args);

/// The option's row of Options.def.
const OptionSpec& optionSpec(Option o);
/// The option's flag ("--backend").
const char* optionFlag(Option o);
/// The default `command` uses for the option, as written on a command line: its own where the
/// table gives one (GPUFUZZ_COMMAND_DEFAULT), else the row's; "" when none holds.
const char* optionDefaultFor(Option o, const std::string& command);

/// The usage text: subcommands and the option table, each option with its default and bounds.
std::string usageText();
/// The usage of one subcommand: its synopsis and the options it takes, each with the default
/// it uses and its bounds. InputError for an unknown subcommand.
std::string commandUsageText(const std::string& command);
/// What `gpufuzz ARGS...` prints for --help or -h among ARGS: the usage of the subcommand named
/// first, or the whole usage; nothing when no --help is asked.
std::optional<std::string> helpRequested(int argc, char** argv);

}  // namespace gpufuzz
