// TargetProtocolTest.cpp: every row of docs/target.md's table, with real processes: small shell
// targets that break the protocol one way each, run by supervise() as a target; the C++ client
// library's toy target, started afresh and forked from itself as a fork server; and a target that
// ignores the fork-server variable, started afresh every time.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/supervise/ForkServer.h"
#include "harness/supervise/Supervisor.h"
#include "tests/ProjectPaths.h"
#include "tests/harness/supervise/DescribeSupervised.h"

namespace gpufuzz {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kToyTarget = (testing::binDir() / "toy-target").string();

class TargetProtocol : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpufuzz-target-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    sequence_ = (dir_ / "three.seq").string();
    std::ofstream(sequence_) << "# gpufuzz sequence\n# policy: shipped\ncreate r0\ndraw r0\n"
                                "destroy r0\n";
  }
  void TearDown() override {
    ForkServers::stopIdle();
    fs::remove_all(dir_);
  }

  /// A shell target whose body is `script` (events go to fd 3: `echo ... >&3`).
  std::string shellTarget(const std::string& name, const std::string& script) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << "#!/bin/sh\n" << script << "\n";
    fs::permissions(path, fs::perms::owner_all);
    return path.string();
  }

  static SupervisionLimits limits(bool forkServer = false) {
    SupervisionLimits l;
    l.target = true;
    l.forkServer = forkServer;
    l.progressDeadline = 300ms;
    l.startDeadline = 5s;
    l.captureStacks = false;
    l.expectedOps = {"create", "draw", "destroy"};
    return l;
  }

  Supervised run(const std::string& program, const SupervisionLimits& l = limits()) {
    return supervise(ChildCommand{program, {sequence_}, 0}, l);
  }

  fs::path dir_;
  std::string sequence_;
};

std::string describe(const Supervised& s) {
  return testing::describeSupervised(s);
}

constexpr const char* kTwoOps =
    "echo 'start 3' >&3; echo 'begin 1 create' >&3; echo 'done 1' >&3;"
    "echo 'begin 2 draw' >&3;";

TEST_F(TargetProtocol, ATargetThatStopsWhileAliveHangsOrSpinsAtItsLastBegin) {
  Supervised hang = run(shellTarget("hang", std::string(kTwoOps) + "exec sleep 60"));
  EXPECT_EQ(hang.outcome.cls, OutcomeClass::Hang) << describe(hang);
  ASSERT_TRUE(hang.outcome.at);
  EXPECT_EQ(hang.outcome.at->ordinal, 2u);
  EXPECT_EQ(hang.outcome.op, "draw");
  Supervised spin = run(shellTarget("spin", std::string(kTwoOps) + "while :; do :; done"));
  EXPECT_EQ(spin.outcome.cls, OutcomeClass::Spin) << describe(spin);
  EXPECT_EQ(spin.outcome.op, "draw");
}

TEST_F(TargetProtocol, ATargetThatDiesByASignalCrashesAtItsLastBegin) {
  const Supervised s = run(shellTarget("crash", std::string(kTwoOps) + "kill -SEGV $$"));
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Crash) << describe(s);
  EXPECT_EQ(s.outcome.op, "draw");
  EXPECT_NE(s.outcome.detail.find("SIGSEGV"), std::string::npos) << describe(s);
  EXPECT_FALSE(s.harnessError);
}

TEST_F(TargetProtocol, ATargetThatExitsWithoutAnOutcomeIsAnErrorAtItsLastBegin) {
  const Supervised s = run(shellTarget("exit", std::string(kTwoOps) + "exit 7"));
  EXPECT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Error) << describe(s);
  EXPECT_EQ(s.outcome.op, "draw");
  EXPECT_NE(s.outcome.detail.find("target exited with status 7 without an outcome"),
            std::string::npos)
      << describe(s);
}

TEST_F(TargetProtocol, ALineThatIsNotAnEventIsAProtocolErrorAndTheRunStopsThere) {
  const auto started = std::chrono::steady_clock::now();
  const Supervised s =
      run(shellTarget("garble", std::string(kTwoOps) + "echo 'hello there' >&3; exec sleep 60"));
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Error) << describe(s);
  EXPECT_TRUE(s.outcome.detail.starts_with("protocol: hello there")) << describe(s);
  EXPECT_EQ(s.outcome.op, "draw");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s) << "the target was left running";
  EXPECT_FALSE(s.harnessError);
}

TEST_F(TargetProtocol, EventsOutOfOrderAreProtocolErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"done-first", "echo 'start 3' >&3; echo 'done 1' >&3"},
      {"skips", "echo 'start 3' >&3; echo 'begin 2 draw' >&3"},
      {"wrong-op", "echo 'start 3' >&3; echo 'begin 1 draw' >&3"},
      {"wrong-count", "echo 'start 2' >&3"},
      {"begin-twice", std::string(kTwoOps) + "echo 'begin 3 destroy' >&3"},
      {"early-end", std::string(kTwoOps) + "echo 'done 2' >&3; echo 'begin end end' >&3"},
      {"early-pass", std::string(kTwoOps) + "echo 'done 2' >&3; echo 'outcome pass - - ' >&3"},
      {"own-hang", std::string(kTwoOps) + "echo 'outcome hang 2 draw stuck' >&3"},
      {"after-outcome",
       std::string(kTwoOps) + "echo 'outcome error 2 draw failed' >&3; echo 'done 2' >&3"},
  };
  for (const auto& [name, script] : cases) {
    const Supervised s = run(shellTarget(name, script + "; exec sleep 60"));
    EXPECT_EQ(s.outcome.cls, OutcomeClass::Error) << name << ": " << describe(s);
    EXPECT_TRUE(s.outcome.detail.starts_with("protocol: ")) << name << ": " << describe(s);
  }
}

TEST_F(TargetProtocol, ATargetThatClosesItsEventsAndLivesOnIsStuck) {
  const Supervised s = run(shellTarget("close", std::string(kTwoOps) + "exec 3>&-; exec sleep 60"));
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Hang) << describe(s);
  EXPECT_EQ(s.outcome.op, "draw");
}

TEST_F(TargetProtocol, ATargetsOutcomeStandsWhateverItsExitStatus) {
  const Supervised s = run(shellTarget(
      "mismatch", std::string(kTwoOps) + "echo 'outcome mismatch 2 draw pixel (0,0)' >&3; exit 0"));
  EXPECT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Mismatch) << describe(s);
  EXPECT_EQ(s.outcome.detail, "pixel (0,0)");
}

TEST_F(TargetProtocol, ATargetGetsItsEventsDescriptorInItsEnvironmentAndTheFile) {
  const Supervised s = run(shellTarget(
      "env", "echo \"fd=$GPUFUZZ_EVENTS_FD file=$1\"; echo 'start 3' >&3; exec sleep 60"));
  EXPECT_NE(s.outputTail.find("fd=3 file=" + sequence_), std::string::npos) << describe(s);
}

TEST_F(TargetProtocol, TheCppLibrarysTargetPassesStartedAfreshAndForked) {
  for (const bool forked : {false, true}) {
    SupervisionLimits l = limits(forked);
    const Supervised s = supervise(ChildCommand{kToyTarget, {sequence_}, 0}, l);
    EXPECT_EQ(s.outcome.cls, OutcomeClass::Pass) << "forked " << forked << ": " << describe(s);
    EXPECT_EQ(s.timings.size(), 4u) << "three operations and the release of leftovers";
    const Supervised bug = supervise(ChildCommand{kToyTarget, {"--bug", sequence_}, 1}, l);
    EXPECT_EQ(bug.outcome.cls, OutcomeClass::Error) << describe(bug);
    ASSERT_TRUE(bug.outcome.at);
    EXPECT_EQ(bug.outcome.at->ordinal, 3u);
    EXPECT_NE(bug.outcome.detail.find("still queued"), std::string::npos) << describe(bug);
  }
}

TEST_F(TargetProtocol, AForkServingTargetRunsInForksOfOneServer) {
  // Its fork children's parent is the server, the same for every run; not this process.
  const std::string script = (dir_ / "parent.seq").string();
  std::ofstream(script) << "create r0\n";
  std::vector<std::string> parents;
  for (int i = 0; i < 3; ++i) {
    SupervisionLimits l = limits(true);
    l.expectedOps = {"create"};
    l.environment = {{"GPUFUZZ_TOY_PRINT_PARENT", "1"}};
    const Supervised s = supervise(ChildCommand{kToyTarget, {script}, 0}, l);
    ASSERT_EQ(s.outcome.cls, OutcomeClass::Pass) << describe(s);
    const auto at = s.outputTail.find("parent ");
    ASSERT_NE(at, std::string::npos) << describe(s);
    parents.push_back(s.outputTail.substr(at, s.outputTail.find('\n', at) - at));
  }
  EXPECT_NE(parents[0], "parent " + std::to_string(::getpid()));
  EXPECT_EQ(parents[0], parents[1]);
  EXPECT_EQ(parents[1], parents[2]);
}

TEST_F(TargetProtocol, ATargetThatDoesNotServeForksIsStartedAfresh) {
  // It ignores GPUFUZZ_FORK_SERVER_FD: started without a file, it exits, saying no hello.
  const std::string program =
      shellTarget("no-server",
                  "[ -n \"$1\" ] || exit 2; echo 'start 3' >&3; echo 'begin 1 create' >&3;"
                  "echo 'done 1' >&3; echo 'begin 2 draw' >&3; echo 'done 2' >&3;"
                  "echo 'begin 3 destroy' >&3; echo 'done 3' >&3; echo 'outcome pass - - ' >&3");
  for (int i = 0; i < 2; ++i) {
    const Supervised s = run(program, limits(true));
    EXPECT_EQ(s.outcome.cls, OutcomeClass::Pass) << describe(s);
  }
}

}  // namespace
}  // namespace gpufuzz
