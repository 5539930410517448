// CommandLineTest.cpp: the option table: typed values, bad usage, bounds, durations, help.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/InputError.h"
#include "harness/cli/CommandLine.h"

namespace gpufuzz {
namespace {

CommandLine parse(const std::vector<std::string>& args) {
  return parseCommandLine(args);
}

/// The InputError's message of parsing `args`; empty when it parses.
std::string parseError(const std::vector<std::string>& args) {
  try {
    parse(args);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

/// A subcommand and the operands it needs, for each of them that takes options.
const std::vector<std::vector<std::string>> kCommands = {
    {"fuzz"},           {"replay", "a.seq"}, {"shrink", "a.seq"}, {"explain", "a.seq"},
    {"promote", "dir"}, {"merge", "dir"},    {"report", "dir"},   {"model", "check", "m.model"}};

TEST(Cli, ParsesTypedValuesOfTheTable) {
  const CommandLine cl = parse({"fuzz", "--policy", "context-first", "--runs=50", "--no-stacks",
                                "--time", "1h30m", "--deadline", "250", "--seed", "0"});
  EXPECT_EQ(cl.command, "fuzz");
  EXPECT_EQ(cl.value<Option::Policy>(), "context-first");
  EXPECT_EQ(cl.value<Option::Runs>(), 50U);
  EXPECT_TRUE(cl.value<Option::NoStacks>());
  EXPECT_FALSE(cl.value<Option::NoExplain>());
  EXPECT_EQ(cl.value<Option::Time>(), std::chrono::seconds(5400));
  EXPECT_EQ(cl.value<Option::Deadline>(), std::optional<uint64_t>(250));
  EXPECT_EQ(cl.value<Option::Seed>(), std::optional<uint64_t>(0));
  EXPECT_TRUE(cl.has(Option::Runs));
  EXPECT_FALSE(cl.has(Option::MaxOps));
}

TEST(Cli, AnOptionNotGivenHasItsTableDefaultOrNone) {
  const CommandLine cl = parse({"fuzz"});
  EXPECT_EQ(cl.value<Option::MaxOps>(), 40U);
  EXPECT_EQ(cl.value<Option::Runs>(), 1000U);
  EXPECT_EQ(cl.value<Option::Grace>(), std::chrono::minutes(5));
  EXPECT_EQ(cl.value<Option::Deadline>(), std::nullopt);  // auto
  EXPECT_EQ(cl.value<Option::Seed>(), std::nullopt);      // from the clock
  EXPECT_EQ(cl.value<Option::Time>(), std::nullopt);
  EXPECT_FALSE(cl.has(Option::Runs));
  // A subcommand's own default (GPUFUZZ_COMMAND_DEFAULT) holds for it alone.
  EXPECT_EQ(parse({"replay", "a.seq"}).value<Option::Confirmations>(), 64U);
  EXPECT_EQ(parse({"shrink", "a.seq"}).value<Option::Confirmations>(), 5U);
  EXPECT_STREQ(optionDefaultFor(Option::Confirmations, "replay"), "64");
  EXPECT_STREQ(optionDefaultFor(Option::Confirmations, "fuzz"), "5");
}

TEST(Cli, EveryDefaultOfTheTableIsAValueOfItsRowWithinItsBounds) {
  for (std::size_t i = 0; i < static_cast<std::size_t>(Option::Count); ++i) {
    const OptionSpec& spec = optionSpec(static_cast<Option>(i));
    EXPECT_NO_THROW(optionDefault(spec)) << spec.flag;
    if (*spec.def == '\0' && spec.kind != OptionKind::Flag) {
      EXPECT_NE(*spec.shownDefault, '\0') << spec.flag << ": no default, and no words for it";
    }
  }
  for (const auto& command : kCommands) {
    EXPECT_NO_THROW(parse(command)) << command.front();  // every command's defaults parse
  }
}

TEST(Cli, EveryBoundIsEnforcedNamingTheOptionAndTheBound) {
  int checked = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(Option::Count); ++i) {
    const OptionSpec& spec = optionSpec(static_cast<Option>(i));
    if (optionBoundsText(spec).empty()) continue;
    const std::string unit = spec.kind == OptionKind::Duration ? "s" : "";
    for (const auto& command : kCommands) {
      std::vector<std::string> args = command;
      args.insert(args.end(), {spec.flag, std::to_string(spec.min) + unit});
      if (!parseError(args).empty()) continue;  // not this subcommand's option
      std::vector<std::string> outside;
      if (spec.min > 0) outside.push_back(std::to_string(spec.min - 1) + unit);
      if (spec.max != UINT64_MAX) outside.push_back(std::to_string(spec.max + 1) + unit);
      for (const std::string& value : outside) {
        args.back() = value;
        const std::string error = parseError(args);
        EXPECT_NE(error.find(spec.flag), std::string::npos) << value << ": " << error;
        EXPECT_NE(error.find(optionBoundsText(spec)), std::string::npos) << value << ": " << error;
        ++checked;
      }
      args.back() = spec.max == UINT64_MAX ? std::to_string(spec.min + 1) + unit
                                           : std::to_string(spec.max) + unit;
      EXPECT_EQ(parseError(args), "") << spec.flag << " " << args.back();
    }
  }
  EXPECT_GE(checked, 10);  // runs, max-ops, threads, jobs, deadline, confirmations, ...
}

TEST(Cli, RejectsBadUsage) {
  EXPECT_THROW(parse({"frobnicate"}), InputError);
  EXPECT_THROW(parse({"fuzz", "--bogus"}), InputError);
  EXPECT_THROW(parse({"fuzz", "--runs"}), InputError);
  EXPECT_THROW(parse({"fuzz", "-o", "x"}), InputError);  // shrink's option
  EXPECT_THROW(parse({"replay"}), InputError);           // needs a file
  EXPECT_THROW(parse({"shrink", "a.seq", "b.seq"}), InputError);
  EXPECT_THROW(parse({"fuzz", "--runs", "12x"}), InputError);
  EXPECT_THROW(parse({"fuzz", "--runs", "0"}), InputError);
  EXPECT_THROW(parse({"fuzz", "--ops", "everything"}), InputError);
  EXPECT_THROW(parse({"fuzz", "--sanitizer", "asan"}), InputError);
  EXPECT_THROW(parse({"fuzz", "--validation", "yes"}), InputError);
  EXPECT_THROW(parse({"fuzz", "--deadline", "fast"}), InputError);
  EXPECT_THROW(parse({"fuzz", "--time", "0s"}), InputError);
  EXPECT_THROW(parse({"fuzz", "--device", ""}), InputError);
  EXPECT_THROW(parse({"fuzz", "--quiet=yes"}), InputError);
  EXPECT_NO_THROW(parse({"fuzz", "--grace", "0"}));
}

TEST(Cli, Durations) {
  EXPECT_EQ(parseDuration("30s").count(), 30);
  EXPECT_EQ(parseDuration("10m").count(), 600);
  EXPECT_EQ(parseDuration("8h").count(), 8 * 3600);
  EXPECT_EQ(parseDuration("1h30m").count(), 5400);
  EXPECT_EQ(parseDuration("90").count(), 90);
  EXPECT_THROW(parseDuration("5y"), InputError);
  EXPECT_THROW(parseDuration(""), InputError);
  EXPECT_THROW(parseDuration("0s"), InputError);
}

TEST(Cli, HelpShowsEachOptionOfTheSubcommandWithItsDefaultAndBounds) {
  const std::string help = commandUsageText("fuzz");
  for (std::size_t i = 0; i < static_cast<std::size_t>(Option::Count); ++i) {
    const auto o = static_cast<Option>(i);
    const std::string flag = optionFlag(o);
    const std::string defaultText =
        optionDefaultAndBounds(optionSpec(o), optionDefaultFor(o, "fuzz"));
    const bool fuzzTakesIt =
        parseError({"fuzz", flag, "--help"}).find("does not apply") == std::string::npos;
    const auto line = help.find("\n  " + flag + " ");
    EXPECT_EQ(line != std::string::npos, fuzzTakesIt) << flag;
    if (line == std::string::npos) continue;
    const std::string text = help.substr(line + 1, help.find('\n', line + 1) - line - 1);
    EXPECT_TRUE(text.ends_with(defaultText)) << text << "\nexpected the end " << defaultText;
  }
  EXPECT_NE(help.find("--threads N"), std::string::npos);
  EXPECT_NE(help.find("[default: 1; bounds: 1..8]"), std::string::npos) << help;
  EXPECT_NE(usageText().find("[default: 5; replay: 64; bounds: 1..1000]"), std::string::npos)
      << usageText();
}

}  // namespace
}  // namespace gpufuzz
