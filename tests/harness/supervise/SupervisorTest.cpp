// SupervisorTest.cpp: every way a supervised child can end, against gpufuzz-fake-runner: the
// outcome classes, where a stuck child was, hang vs spin, crash signals, bounded output, stacks,
// the group kill, no zombies or leaked descriptors, concurrent supervision, harness errors.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/supervise/ForkServer.h"
#include "harness/supervise/RunCancel.h"
#include "harness/supervise/StackCapture.h"
#include "harness/supervise/Strays.h"
#include "harness/supervise/Supervisor.h"
#include "tests/harness/supervise/DescribeSupervised.h"
#include "tests/harness/supervise/FakeRunnerPath.h"

namespace gpufuzz {
namespace {

using namespace std::chrono_literals;

using testing::kFakeRunner;

// Every test runs twice: children started afresh, and children forked from a fork server.
bool forkServerInUse = false;

class Supervisor : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { forkServerInUse = GetParam(); }
  // Servers are children too: a test that counts children or descriptors stops them first.
  static void stopForkServers() { ForkServers::stopIdle(); }
};

SupervisionLimits fastLimits() {
  SupervisionLimits limits;
  limits.forkServer = forkServerInUse;
  limits.progressDeadline = 150ms;
  limits.startDeadline = 2s;
  limits.captureStacks = false;
  return limits;
}

Supervised runFake(std::vector<std::string> args, const SupervisionLimits& limits = fastLimits()) {
  return supervise(ChildCommand{kFakeRunner, std::move(args)}, limits);
}

std::string describe(const Supervised& s) {
  return testing::describeSupervised(s, std::string::npos);
}

int countOpenFds() {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (const dirent* entry = ::readdir(dir))
    count += entry->d_name[0] != '.';
  ::closedir(dir);
  return count - 1;  // the directory's own descriptor
}

/// Waits (up to 2 s) for `pid` to be gone or a zombie awaiting a reaper other than us.
bool becomesDead(pid_t pid) {
  const auto giveUp = std::chrono::steady_clock::now() + 2s;
  while (std::chrono::steady_clock::now() < giveUp) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (std::getline(stat, line)) {
      const auto close = line.rfind(')');
      if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') {
        return true;
      }
    }
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

pid_t grandchildPid(const std::string& output) {
  const auto pos = output.find("grandchild ");
  return pos == std::string::npos ? -1 : std::atoi(output.c_str() + pos + 11);
}

TEST_P(Supervisor, ChildrenAreForkedByAServerOrStartedByTheHarnessAsAsked) {
  const Supervised s = runFake({"--print-parent"});
  ASSERT_EQ(s.outcome.cls, OutcomeClass::Pass) << describe(s);
  const std::string mine = "parent " + std::to_string(::getpid()) + "\n";
  if (forkServerInUse) {
    EXPECT_NE(s.outputTail.find("parent "), std::string::npos) << s.outputTail;
    EXPECT_EQ(s.outputTail.find(mine), std::string::npos) << "started afresh: " << s.outputTail;
  } else {
    EXPECT_NE(s.outputTail.find(mine), std::string::npos) << s.outputTail;
  }
}

TEST_P(Supervisor, PassingChildReportsPassAndTimings) {
  const Supervised s = runFake({"--ops", "3"});
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Pass);
  EXPECT_EQ(s.exitCode, 0);
  EXPECT_EQ(s.termSignal, 0);
  EXPECT_FALSE(s.stuck);
  ASSERT_EQ(s.timings.size(), 3u);
  EXPECT_EQ(s.timings[1].at, At{2});
  EXPECT_EQ(s.timings[1].op, "draw");
  EXPECT_GT(s.wall.count(), 0);
}

TEST_P(Supervisor, FailureIsTheOutcomeTheChildReported) {
  const Supervised s = runFake({"--ops", "3", "--fail-at", "2"});
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Error);
  EXPECT_EQ(s.outcome.at, At{2});
  EXPECT_EQ(s.outcome.op, "draw");
  EXPECT_EQ(s.outcome.detail, "cuCtxCreate: out of memory");
  EXPECT_EQ(s.exitCode, 1);
}

TEST_P(Supervisor, IdleStuckOperationIsAHang) {
  const Supervised s = runFake({"--ops", "4", "--hang-at", "3"});
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_TRUE(s.stuck);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Hang) << describe(s);
  EXPECT_EQ(s.outcome.at, At{3});
  EXPECT_EQ(s.outcome.op, "sync");
  EXPECT_NE(s.outcome.detail.find("no progress for "), std::string::npos) << s.outcome.detail;
  EXPECT_NE(s.outcome.detail.find("% CPU"), std::string::npos) << s.outcome.detail;
  EXPECT_LT(s.cpuShareWhileStuck, 0.1);
  EXPECT_EQ(s.termSignal, SIGKILL);
  EXPECT_EQ(s.timings.size(), 2u);
  EXPECT_TRUE(s.stacks.empty());
  EXPECT_LT(s.wall, 2s);
}

TEST_P(Supervisor, BusyStuckOperationIsASpin) {
  const Supervised s = runFake({"--ops", "3", "--spin-at", "2"});
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_TRUE(s.stuck);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Spin) << describe(s);
  EXPECT_EQ(s.outcome.at, At{2});
  EXPECT_EQ(s.outcome.op, "draw");
  EXPECT_GT(s.cpuShareWhileStuck, 0.1);
}

TEST_P(Supervisor, ChildStuckBeforeStartIsStuckAtTheStart) {
  SupervisionLimits limits = fastLimits();
  limits.startDeadline = 200ms;
  const Supervised s = runFake({"--hang-before-start"}, limits);
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_TRUE(s.stuck);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Hang);
  EXPECT_FALSE(s.outcome.at);
  EXPECT_EQ(s.outcome.op, "start");
}

TEST_P(Supervisor, DeathBySignalIsACrashNamingTheSignal) {
  const Supervised s = runFake({"--ops", "3", "--segv-at", "2"});
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_FALSE(s.stuck);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Crash);
  EXPECT_EQ(s.outcome.at, At{2});
  EXPECT_EQ(s.outcome.op, "draw");
  EXPECT_NE(s.outcome.detail.find("SIGSEGV"), std::string::npos) << s.outcome.detail;
  EXPECT_EQ(s.termSignal, SIGSEGV);
  EXPECT_EQ(s.exitCode, -1);
}

// A kind with a deadline of its own: a long one lets its slow operation finish, a short one
// catches a hang sooner than the general deadline would.
TEST_P(Supervisor, AnOperationKindsOwnDeadlineAppliesToItsOperations) {
  SupervisionLimits limits = fastLimits();
  limits.progressDeadline = 150ms;
  limits.opDeadlines = {{"draw", 2s}};  // operation 2 of the stand-in is a draw
  const Supervised slow = runFake({"--ops", "3", "--sleep-at", "2", "--sleep-ms", "500"}, limits);
  EXPECT_EQ(slow.outcome.cls, OutcomeClass::Pass) << describe(slow);
  const Supervised other = runFake({"--ops", "3", "--sleep-at", "3", "--sleep-ms", "500"}, limits);
  EXPECT_TRUE(other.stuck) << "a sync keeps the general deadline: " << describe(other);

  limits.progressDeadline = 5s;
  limits.opDeadlines = {{"create", 100ms}};
  const auto start = std::chrono::steady_clock::now();
  const Supervised hang = runFake({"--ops", "3", "--hang-at", "1"}, limits);
  EXPECT_EQ(hang.outcome.cls, OutcomeClass::Hang) << describe(hang);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s) << "the create's own deadline decides";
}

TEST_P(Supervisor, SlowOperationWithinTheDeadlinePasses) {
  SupervisionLimits limits = fastLimits();
  limits.progressDeadline = 400ms;
  const Supervised s = runFake({"--ops", "3", "--sleep-at", "2", "--sleep-ms", "60"}, limits);
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Pass);
  ASSERT_EQ(s.timings.size(), 3u);
  // Measured from the events' arrival, so a little short of the sleep when the begin arrived
  // late on a loaded machine.
  EXPECT_GE(s.timings[1].elapsed, 50ms);
  EXPECT_LT(s.timings[0].elapsed, s.timings[1].elapsed);
}

TEST_P(Supervisor, SlowOperationIsStuckUnderTheDeadlineAndFinishesUnderALongerOne) {
  const std::vector<std::string> args{"--ops", "3", "--sleep-at", "2", "--sleep-ms", "400"};
  const Supervised first = runFake(args);
  EXPECT_TRUE(first.stuck) << describe(first);
  EXPECT_EQ(first.outcome.cls, OutcomeClass::Hang);
  EXPECT_EQ(first.outcome.at, At{2});

  SupervisionLimits longer = fastLimits();
  longer.progressDeadline = 2s;
  const Supervised confirmation = runFake(args, longer);
  EXPECT_FALSE(confirmation.stuck);
  EXPECT_EQ(confirmation.outcome.cls, OutcomeClass::Pass) << describe(confirmation);
}

TEST_P(Supervisor, GrandchildOfAStuckChildDiesWithItsGroup) {
  const Supervised s = runFake({"--grandchild", "--hang-at", "1"});
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Hang) << describe(s);
  const pid_t grandchild = grandchildPid(s.outputTail);
  ASSERT_GT(grandchild, 0) << s.outputTail;
  EXPECT_TRUE(becomesDead(grandchild));
}

TEST_P(Supervisor, GrandchildOfAPassingChildDiesWithItsGroup) {
  const Supervised s = runFake({"--grandchild"});
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Pass);
  const pid_t grandchild = grandchildPid(s.outputTail);
  ASSERT_GT(grandchild, 0) << s.outputTail;
  EXPECT_TRUE(becomesDead(grandchild));
}

TEST_P(Supervisor, OutputTailKeepsOnlyTheLastBytes) {
  SupervisionLimits limits = fastLimits();
  limits.outputLimit = 4096;
  const Supervised s = runFake({"--output-bytes", "1000000"}, limits);
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outputTail.size(), 4096u);
  EXPECT_TRUE(s.outputTail.ends_with("xxxxEND\n"));
}

TEST_P(Supervisor, StacksOfAStuckChildAreCaptured) {
  if (!findStackDebugger()) GTEST_SKIP() << "neither gdb nor cuda-gdb is here";
  SupervisionLimits limits = fastLimits();
  limits.captureStacks = true;
  const Supervised s = runFake({"--ops", "2", "--hang-at", "2"}, limits);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Hang) << describe(s);
  ASSERT_FALSE(s.stacks.empty());
  EXPECT_NE(s.stacks.find("#0"), std::string::npos) << s.stacks;
  EXPECT_NE(s.stacks.find("pause"), std::string::npos) << s.stacks;
}

TEST_P(Supervisor, ChildInheritsOnlyStdioAndTheEventsPipe) {
  // Descriptors without O_CLOEXEC, one of them low enough to lie among the ones the launcher
  // whitelists (below its own error pipe), which its close_all leaves open.
  const int placeholder = ::open("/dev/null", O_RDONLY);
  const int low = ::open("/dev/null", O_RDONLY);
  const int high = ::fcntl(low, F_DUPFD, 100);
  ASSERT_GE(high, 0);
  ::close(placeholder);
  const Supervised s = runFake({"--list-fds"});
  ::close(low);
  ::close(high);
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outputTail, "fd 0\nfd 1\nfd 2\nfd 3\n");
}

TEST_P(Supervisor, EnvironmentOverridesReachTheChild) {
  ::setenv("GPUFUZZ_SUPERVISOR_TEST", "inherited", 1);
  SupervisionLimits limits = fastLimits();
  limits.environment = {{"GPUFUZZ_SUPERVISOR_TEST", "replaced"}};
  const Supervised s = runFake({"--print-env", "GPUFUZZ_SUPERVISOR_TEST"}, limits);
  ::unsetenv("GPUFUZZ_SUPERVISOR_TEST");
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outputTail, "GPUFUZZ_SUPERVISOR_TEST=replaced\n");
}

TEST_P(Supervisor, ExitWithoutAnOutcomeIsAHarnessError) {
  const Supervised s = runFake({"--no-outcome"});
  ASSERT_TRUE(s.harnessError);
  EXPECT_NE(s.harnessError->find("without reporting an outcome"), std::string::npos)
      << *s.harnessError;
  EXPECT_EQ(s.exitCode, 0);
}

TEST_P(Supervisor, ExitStatusContradictingTheOutcomeIsAHarnessError) {
  const Supervised s = runFake({"--exit", "1"});
  ASSERT_TRUE(s.harnessError);
  EXPECT_NE(s.harnessError->find("status 1 but reported 'pass'"), std::string::npos)
      << *s.harnessError;
}

TEST_P(Supervisor, BadInputIsAHarnessErrorQuotingTheChild) {
  const Supervised s = runFake({"--bogus"});
  ASSERT_TRUE(s.harnessError);
  EXPECT_NE(s.harnessError->find("exit status 2"), std::string::npos) << *s.harnessError;
  EXPECT_NE(s.harnessError->find("unknown argument '--bogus'"), std::string::npos)
      << *s.harnessError;
}

TEST_P(Supervisor, MissingExecutableIsAHarnessError) {
  const Supervised s = supervise(ChildCommand{"/nonexistent/gpufuzz-runner", {}}, fastLimits());
  ASSERT_TRUE(s.harnessError);
  EXPECT_NE(s.harnessError->find("cannot start"), std::string::npos) << *s.harnessError;
  EXPECT_NE(s.harnessError->find("/nonexistent/gpufuzz-runner"), std::string::npos);
}

TEST_P(Supervisor, ManyRunsLeaveNoZombiesAndNoDescriptors) {
  stopForkServers();
  strays::prepare();  // opens what stays open for the process's life (Strays.h), once
  const int fdsBefore = countOpenFds();
  SupervisionLimits limits = fastLimits();
  limits.progressDeadline = 100ms;
  for (int i = 0; i < 50; ++i) {
    std::vector<std::string> args{"--ops", "2"};
    if (i % 10 == 3) args.insert(args.end(), {"--hang-at", "1"});
    if (i % 10 == 6) args.insert(args.end(), {"--segv-at", "2"});
    if (i % 10 == 8) args.push_back("--grandchild");
    const Supervised s = runFake(args, limits);
    ASSERT_FALSE(s.harnessError) << "run " << i << ": " << describe(s);
  }
  supervise(ChildCommand{"/nonexistent/gpufuzz-runner", {}}, limits);
  stopForkServers();
  EXPECT_EQ(countOpenFds(), fdsBefore);
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);  // no child left at all, zombie or not
}

TEST_P(Supervisor, ConcurrentSupervisionFromFourThreads) {
  std::mutex mutex;
  std::vector<std::string> failures;
  const auto expect = [&](bool ok, const std::string& what, const Supervised& s) {
    if (ok) return;
    const std::lock_guard lock(mutex);
    failures.push_back(what + ": " + describe(s));
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 6; ++i) {
        switch ((t + i) % 4) {
          case 0: {
            const Supervised s = runFake({"--ops", "5"});
            expect(s.outcome.cls == OutcomeClass::Pass && !s.harnessError, "pass", s);
            break;
          }
          case 1: {
            const Supervised s = runFake({"--ops", "3", "--hang-at", "2"});
            expect(s.outcome.cls == OutcomeClass::Hang && s.outcome.at == At{2}, "hang", s);
            break;
          }
          case 2: {
            const Supervised s = runFake({"--ops", "3", "--fail-at", "3"});
            expect(s.outcome.cls == OutcomeClass::Error && s.outcome.at == At{3}, "error", s);
            break;
          }
          default: {
            const Supervised s = runFake({"--ops", "3", "--segv-at", "1"});
            expect(s.outcome.cls == OutcomeClass::Crash && s.termSignal == SIGSEGV, "crash", s);
            break;
          }
        }
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  for (const auto& failure : failures)
    ADD_FAILURE() << failure;
}

TEST_P(Supervisor, KillAllChildrenInterruptsEveryRun) {
  SupervisionLimits limits = fastLimits();
  limits.progressDeadline = 20s;
  std::vector<Supervised> results(2);
  std::atomic<std::size_t> finished{0};
  std::vector<std::thread> threads;
  for (auto& result : results) {
    threads.emplace_back([&] {
      result = runFake({"--hang-at", "1"}, limits);
      ++finished;
    });
  }
  std::this_thread::sleep_for(300ms);
  while (finished < results.size()) {  // again, in case a child had not started yet
    killAllChildren();
    std::this_thread::sleep_for(50ms);
  }
  for (auto& thread : threads)
    thread.join();
  for (const Supervised& s : results) {
    ASSERT_TRUE(s.harnessError) << describe(s);
    EXPECT_NE(s.harnessError->find("interrupted"), std::string::npos) << *s.harnessError;
    EXPECT_LT(s.wall, 5s);
  }
}

// A cancel from another thread kills the one run that watches it, with its grandchild, at once;
// a run beside it that does not watch that token goes on to its own end.
TEST_P(Supervisor, ACancelledRunIsKilledAtOnceAndSaysSo) {
  SupervisionLimits limits = fastLimits();
  limits.progressDeadline = 20s;
  RunCancel cancel;
  limits.cancel = &cancel;
  Supervised cancelled, other;
  std::thread watching([&] { cancelled = runFake({"--grandchild", "--hang-at", "1"}, limits); });
  SupervisionLimits uncancelled = fastLimits();
  uncancelled.progressDeadline = 20s;
  std::thread beside([&] {
    other = runFake({"--sleep-at", "1", "--sleep-ms", "1500"}, uncancelled);
  });
  std::this_thread::sleep_for(300ms);
  cancel.cancel();
  watching.join();
  beside.join();
  ASSERT_TRUE(cancelled.harnessError) << describe(cancelled);
  EXPECT_TRUE(cancelled.cancelled);
  EXPECT_EQ(*cancelled.harnessError, kCancelledRun);
  EXPECT_FALSE(cancelled.stuck) << "killed by the cancel, not by its deadline";
  EXPECT_LT(cancelled.wall, 5s);
  const pid_t grandchild = grandchildPid(cancelled.outputTail);
  ASSERT_GT(grandchild, 0) << cancelled.outputTail;
  EXPECT_TRUE(becomesDead(grandchild));
  EXPECT_FALSE(other.cancelled);
  EXPECT_EQ(other.outcome.cls, OutcomeClass::Pass) << describe(other);
}

// A run given a token cancelled already starts no child; a cancel after a run ended changes
// nothing of it.
TEST_P(Supervisor, ARunCancelledBeforeItStartsStartsNoChild) {
  SupervisionLimits limits = fastLimits();
  RunCancel cancel;
  limits.cancel = &cancel;
  const Supervised finished = runFake({"--print-parent"}, limits);
  cancel.cancel();
  EXPECT_FALSE(finished.cancelled);
  EXPECT_EQ(finished.outcome.cls, OutcomeClass::Pass) << describe(finished);
  const Supervised never = runFake({"--print-parent"}, limits);
  EXPECT_TRUE(never.cancelled);
  EXPECT_EQ(never.outputTail.find("parent "), std::string::npos) << "a child ran";
}

INSTANTIATE_TEST_SUITE_P(StartedAfreshAndForked, Supervisor, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "Forked" : "Fresh";
                         });

}  // namespace
}  // namespace gpufuzz
