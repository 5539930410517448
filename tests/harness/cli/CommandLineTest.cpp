// CommandLineTest.cpp: the option table, bad usage, durations.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/cli/CommandLine.h"
#include "renderer/InputError.h"

namespace gpufuzz {
namespace {

CommandLine parse(std::vector<std::string> args) {
  args.insert(args.begin(), "gpufuzz");
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  return parseCommandLine(static_cast<int>(argv.size()), argv.data());
}

TEST(Cli, ParsesOptionsOfTheTable) {
  const CommandLine cl = parse({"fuzz", "--policy", "context-first", "--runs=50", "--no-stacks"});
  EXPECT_EQ(cl.command, "fuzz");
  EXPECT_EQ(cl.get(Option::Policy), "context-first");
  EXPECT_EQ(cl.number(Option::Runs, 1000), 50U);
  EXPECT_TRUE(cl.has(Option::NoStacks));
  EXPECT_EQ(cl.number(Option::MaxOps, 40), 40U);
}

TEST(Cli, RejectsBadUsage) {
  EXPECT_THROW(parse({"frobnicate"}), InputError);
  EXPECT_THROW(parse({"fuzz", "--bogus"}), InputError);
  EXPECT_THROW(parse({"fuzz", "--runs"}), InputError);
  EXPECT_THROW(parse({"fuzz", "-o", "x"}), InputError);  // shrink's option
  EXPECT_THROW(parse({"replay"}), InputError);           // needs a file
  EXPECT_THROW(parse({"shrink", "a.seq", "b.seq"}), InputError);
  EXPECT_THROW(parse({"fuzz", "--runs", "12x"}).number(Option::Runs, 1), InputError);
  EXPECT_THROW(parse({"fuzz", "--runs", "0"}).number(Option::Runs, 1), InputError);
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

}  // namespace
}  // namespace gpufuzz
