// RunnerArgsTest.cpp: gpufuzz-runner's command line, declared once (RunnerCommandLine.h): what the
// harness writes the runner parses to the same values, for every field; bad usage is refused;
// and the runner executable reads it as written.
#include <gtest/gtest.h>

#include "base/InputError.h"
#include "harness/protocol/RunnerCommandLine.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

/// RunnerArgs as the harness makes them: a child's, a try's, a persistent child's, a probe's.
std::vector<RunnerArgs> samples() {
  std::vector<RunnerArgs> all;
  RunnerArgs child;
  child.overrides = {"opencl", "context-first", "plans/a b.plan",
                     BackendOptions{"pocl", false, 1U << 26}, ScheduleMode::Collide};
  child.quiet = true;
  child.eventsFd = 3;
  child.attempt = 7;
  child.file = "/tmp/work dir/seq-1.seq";
  all.push_back(child);
  RunnerArgs persistent = child;
  persistent.file.clear();
  persistent.attempt = 0;
  persistent.persistent = "/tmp/fifo";
  persistent.overrides.backendOptions = {"NVIDIA CUDA", true, std::nullopt};
  all.push_back(persistent);
  RunnerArgs probe;
  probe.probe = true;
  probe.overrides.backend = "vulkan";
  all.push_back(probe);
  RunnerArgs bare;
  bare.file = "-";
  all.push_back(bare);
  RunnerArgs zeroFd;
  zeroFd.eventsFd = 0;
  zeroFd.file = "x.seq";
  all.push_back(zeroFd);
  return all;
}

TEST(RunnerArgs, WhatTheHarnessWritesTheRunnerParsesToTheSameValues) {
  for (const RunnerArgs& args : samples()) {
    const std::vector<std::string> words = runnerArgs(args);
    EXPECT_EQ(parseRunnerArgs(words), args) << ::testing::PrintToString(words);
  }
}

TEST(RunnerArgs, OnlyWhatDiffersFromTheDefaultsIsWritten) {
  RunnerArgs which;
  EXPECT_TRUE(runnerArgs(which).empty());
  which.attempt = 2;
  EXPECT_EQ(runnerArgs(which), (std::vector<std::string>{"--try", "2"}));
  RunnerArgs events;
  events.eventsFd = 3;
  EXPECT_EQ(runnerArgs(events), (std::vector<std::string>{"--events-fd", "3"}));
}

TEST(RunnerArgs, BadUsageIsRefused) {
  using V = std::vector<std::string>;
  EXPECT_THROW(parseRunnerArgs(V{}), InputError);
  EXPECT_THROW(parseRunnerArgs(V{"a.seq", "b.seq"}), InputError);
  EXPECT_THROW(parseRunnerArgs(V{"--probe", "a.seq"}), InputError);
  EXPECT_THROW(parseRunnerArgs(V{"--persistent", "f", "a.seq"}), InputError);
  EXPECT_THROW(parseRunnerArgs(V{"--bogus", "a.seq"}), InputError);
  EXPECT_THROW(parseRunnerArgs(V{"--try", "-1", "a.seq"}), InputError);
  EXPECT_THROW(parseRunnerArgs(V{"--validation", "yes", "a.seq"}), InputError);
  EXPECT_THROW(parseRunnerArgs(V{"--device", "", "a.seq"}), InputError);
  try {
    parseRunnerArgs(V{"--events-fd", "1048577", "a.seq"});
    ADD_FAILURE() << "an events descriptor out of bounds was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--events-fd: 1048577 is out of bounds (0..1048576)"),
              std::string::npos)
        << e.what();
  }
}

TEST(RunnerArgs, TheRunnerReadsWhatIsWrittenAndPrintsItsOptions) {
  testing::ScratchDir dir;
  const std::string seq = (dir.path() / "pass.seq").string();
  testing::runCommand("printf 'create a\\ndestroy a\\n' > " + seq);
  RunnerArgs args;
  args.overrides = {"sim", "shipped", "none", {}, {}};
  args.file = seq;
  std::string command = (testing::binDir() / kRunnerProgram).string();
  for (const std::string& w : runnerArgs(args))
    command += " '" + w + "'";
  const auto r = testing::runCommand(command);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("outcome: pass"), std::string::npos) << r.output;
  const auto help = testing::runCommand((testing::binDir() / kRunnerProgram).string() + " --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.output.find("--events-fd N"), std::string::npos) << help.output;
  const auto bad = testing::runCommand((testing::binDir() / kRunnerProgram).string() +
                                       " --events-fd 1048577 " + seq);
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find("gpufuzz-runner: error: --events-fd"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace gpufuzz
