// HostileTargetTest.cpp: targets that misbehave (hostile-target, a Python script; the fake runner
// for the fork-server path) get the outcome docs/target.md gives them, the harness stays small and
// quick, and no process they start outlives the run or the harness, not even on kill -9.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/base/ScratchFolder.h"
#include "harness/supervise/ForkServer.h"
#include "harness/supervise/Strays.h"
#include "harness/supervise/Supervisor.h"
#include "tests/ProjectPaths.h"
#include "tests/harness/supervise/DescribeSupervised.h"
#include "tests/harness/supervise/FakeRunnerPath.h"

extern char** environ;

namespace gpufuzz {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kTarget =
    (testing::sourceDir() / "tests/harness/supervise/hostile-target").string();
using testing::kFakeRunner;
const std::string kSuperviseOnce = (testing::binDir() / "gpufuzz-supervise-once").string();

SupervisionLimits limits(std::chrono::milliseconds deadline = 300ms) {
  SupervisionLimits l;
  l.progressDeadline = deadline;
  l.startDeadline = 10s;  // python3's start-up, on a loaded machine
  l.captureStacks = false;
  l.target = true;
  return l;
}

/// The fake runner is the project's runner, not a target.
SupervisionLimits runnerLimits() {
  SupervisionLimits l = limits();
  l.target = false;
  return l;
}

Supervised runTarget(std::vector<std::string> args, const SupervisionLimits& l = limits()) {
  return supervise(ChildCommand{kTarget, std::move(args)}, l);
}

std::string describe(const Supervised& s) {
  return testing::describeSupervised(s, std::string::npos);
}

/// A process that is neither running nor a zombie waiting for anyone.
bool gone(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

/// Whether `pid` is gone (or a zombie of a reaper other than this process) within `limit`.
bool goneWithin(pid_t pid, std::chrono::milliseconds limit) {
  const auto giveUp = Clock::now() + limit;
  for (;;) {
    ::waitpid(pid, nullptr, WNOHANG);  // it may have come to this process as an orphan
    if (gone(pid)) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (std::getline(stat, line)) {
      const auto close = line.rfind(')');
      if (close != std::string::npos && line.size() > close + 2 && line[close + 2] == 'Z') {
        return true;
      }
    }
    if (Clock::now() > giveUp) return false;
    std::this_thread::sleep_for(5ms);
  }
}

pid_t strayPid(const std::string& output) {
  const auto pos = output.find("stray ");
  return pos == std::string::npos ? -1 : std::atoi(output.c_str() + pos + 6);
}

/// The pids a stray wrote to `path`, waiting up to 10 s for the file.
std::vector<pid_t> pidsIn(const std::string& path) {
  const auto giveUp = Clock::now() + 10s;
  while (!std::filesystem::exists(path) && Clock::now() < giveUp)
    std::this_thread::sleep_for(5ms);
  std::ifstream in(path);
  std::vector<pid_t> pids;
  for (pid_t pid; in >> pid;)
    pids.push_back(pid);
  return pids;
}

std::string tempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("gpufuzz-hostile-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

// --- outcomes ------------------------------------------------------------------------------

TEST(HostileTarget, ClosingTheEventsDescriptorAndWaitingIsAHang) {
  const Supervised s = runTarget({"close-events", "idle"});
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Hang) << describe(s);
  EXPECT_EQ(s.outcome.at, At{1});
  EXPECT_EQ(s.outcome.op, "create");
}

TEST(HostileTarget, ClosingTheEventsDescriptorAndSpinningIsASpin) {
  const Supervised s = runTarget({"close-events", "busy"});
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Spin) << describe(s);
  EXPECT_EQ(s.outcome.at, At{1});
}

TEST(HostileTarget, DeathBySignalIsACrashAtTheLastBegin) {
  const Supervised s = runTarget({"signal"});
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Crash) << describe(s);
  EXPECT_EQ(s.outcome.at, At{2});
  EXPECT_EQ(s.outcome.op, "draw");
  EXPECT_NE(s.outcome.detail.find("SIGSEGV"), std::string::npos) << s.outcome.detail;
}

TEST(HostileTarget, SpinningIsASpin) {
  const Supervised s = runTarget({"spin"});
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Spin) << describe(s);
  EXPECT_EQ(s.outcome.at, At{1});
}

TEST(HostileTarget, IgnoringSigtermAndSigintChangesNothing) {
  const auto start = Clock::now();
  const Supervised s = runTarget({"ignore-term"});
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Hang) << describe(s);
  EXPECT_EQ(s.termSignal, SIGKILL);
  EXPECT_LT(Clock::now() - start, 8s);
}

TEST(HostileTarget, ExitingWithoutAnOutcomeIsAnError) {
  const Supervised s = runTarget({"no-outcome"});
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Error) << describe(s);
  EXPECT_EQ(s.outcome.at, At{2});
  EXPECT_NE(s.outcome.detail.find("target exited with status 0 without an outcome"),
            std::string::npos)
      << s.outcome.detail;
}

TEST(HostileTarget, AGarbledEventsLineIsAProtocolErrorAndEndsTheRun) {
  const auto start = Clock::now();
  const Supervised s = runTarget({"garble"}, limits(20s));
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Error) << describe(s);
  EXPECT_EQ(s.outcome.at, At{1});
  EXPECT_TRUE(s.outcome.detail.starts_with("protocol: this is not an event")) << s.outcome.detail;
  EXPECT_LT(Clock::now() - start, 10s) << "the run stops at the line, not at the deadline";
}

// --- floods --------------------------------------------------------------------------------

struct HarnessRun {
  int status = 0;
  long maxRssKb = 0;  // the harness's peak, or one of its children's (the target) if larger
  std::string output;
  std::chrono::milliseconds wall{};
};

/// Starts `argv` with its stdout and stderr in `outPath`.
pid_t startHarness(std::vector<std::string> argv, const std::string& outPath) {
  std::vector<char*> cargv;
  for (auto& a : argv)
    cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  if (::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, cargv.data(), environ) != 0) {
    pid = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

/// Runs a harness (`argv`) to the end: its exit status, peak memory and output.
HarnessRun runHarness(const std::vector<std::string>& argv) {
  const std::string outPath = tempPath("harness.out");
  HarnessRun run;
  const auto start = Clock::now();
  const pid_t pid = startHarness(argv, outPath);
  if (pid <= 0) {
    ADD_FAILURE() << "cannot start " << argv[0];
    return run;
  }
  rusage usage{};
  ::wait4(pid, &run.status, 0, &usage);
  run.wall = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  run.maxRssKb = usage.ru_maxrss;
  std::ifstream in(outPath);
  run.output.assign(std::istreambuf_iterator<char>(in), {});
  std::filesystem::remove(outPath);
  return run;
}

HarnessRun superviseOnce(std::vector<std::string> args) {
  args.insert(args.begin(), kSuperviseOnce);
  return runHarness(args);
}

/// A sequence file of `ops` (one operation a line, renderer r0).
std::string sequenceFile(const std::string& name, const std::vector<std::string>& ops) {
  const std::string path = tempPath(name + ".seq");
  std::ofstream out(path);
  out << "# gpufuzz sequence\n";
  for (const std::string& op : ops)
    out << op << " r0\n";
  return path;
}

// 300 MB through the output pipe; the harness keeps its tail only. (wait4's peak covers the
// harness and the children it reaped: the target, a small Python, is the larger of them.)
TEST(HostileTarget, AFloodOfOutputKeepsTheHarnessSmall) {
  const HarnessRun run = superviseOnce({"--deadline-ms", "20000", kTarget, "flood", "300000000"});
  ASSERT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << run.output;
  EXPECT_NE(run.output.find("outcome pass"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("harness error"), std::string::npos) << run.output;
  EXPECT_LT(run.maxRssKb, 64 * 1024) << "peak RSS " << run.maxRssKb << " kB";
  std::printf("300 MB of output: peak RSS %ld kB, %lld ms\n", run.maxRssKb,
              static_cast<long long>(run.wall.count()));
}

// A line that never ends on the events pipe: stuck (writing into a full pipe is mostly waiting,
// so hang or spin), and the harness keeps only the line's head.
TEST(HostileTarget, AnEventsLineThatNeverEndsIsStuckAndBounded) {
  const HarnessRun run = superviseOnce({"--deadline-ms", "1500", kTarget, "endless-line"});
  ASSERT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << run.output;
  EXPECT_TRUE(run.output.find("outcome hang") != std::string::npos ||
              run.output.find("outcome spin") != std::string::npos)
      << run.output;
  EXPECT_LT(run.maxRssKb, 64 * 1024) << "peak RSS " << run.maxRssKb << " kB";
  EXPECT_LT(run.wall, 20s);
}

// Output floods between every begin and done: the events still arrive in time.
TEST(HostileTarget, AFloodOfOutputDuringEveryOperationIsNoHang) {
  SupervisionLimits l = limits(1500ms);
  l.outputLimit = 4096;
  const Supervised s = runTarget({"flood-steady", "16", "12"}, l);
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Pass) << describe(s);
  EXPECT_EQ(s.outputTail.size(), 4096u);
  EXPECT_EQ(s.timings.size(), 13u);  // and the release at the end
}

// Children that write without end keep the output pipe full: the events, the exit and the
// deadlines still get their turn, and the run ends when the target does.
TEST(HostileTarget, WritersThatNeverStopDelayNothing) {
  const auto start = Clock::now();
  const Supervised s = runTarget({"flood-writers", "3", "10"}, limits(1500ms));
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Pass) << describe(s);
  EXPECT_LT(Clock::now() - start, 20s);
}

// A fork server's own output is nobody's to read: it goes nowhere, so a server that talks at
// start-up still says its hello (a full pipe would block it until the hello's deadline, 30 s).
TEST(HostileTarget, AForkServerThatFloodsItsOutputStillServes) {
  ForkServers::stopIdle();
  ::setenv("GPUFUZZ_FAKE_SERVER_NOISE", "4000000", 1);
  SupervisionLimits l = runnerLimits();
  l.forkServer = true;
  const auto start = Clock::now();
  const Supervised s = supervise(ChildCommand{kFakeRunner, {"--ops", "2", "--print-parent"}}, l);
  ::unsetenv("GPUFUZZ_FAKE_SERVER_NOISE");
  EXPECT_EQ(s.outputTail.find("parent " + std::to_string(::getpid())), std::string::npos)
      << "started afresh, not forked: " << s.outputTail;
  ForkServers::stopIdle();
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Pass) << describe(s);
  EXPECT_LT(Clock::now() - start, 10s);
}

// --- descendants ---------------------------------------------------------------------------

TEST(HostileTarget, AChildLeftInTheGroupHoldingThePipesIsKilledWithoutWaiting) {
  const Supervised s = runTarget({"leave-child"});
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Pass) << describe(s);
  const pid_t stray = strayPid(s.outputTail);
  ASSERT_GT(stray, 0) << s.outputTail;
  EXPECT_TRUE(gone(stray)) << "still there when the run returned: " << stray;
  EXPECT_LT(s.wall, 3s) << describe(s);
}

TEST(HostileTarget, AChildInASessionOfItsOwnIsKilledWhenTheRunEnds) {
  const auto start = Clock::now();
  const Supervised s = runTarget({"setsid-child"});
  const auto took = Clock::now() - start;
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Pass) << describe(s);
  const pid_t stray = strayPid(s.outputTail);
  ASSERT_GT(stray, 0) << s.outputTail;
  EXPECT_TRUE(gone(stray)) << "outlived the run: " << stray;
  // It held the pipes: without the sweep the run would wait out the pipe grace.
  EXPECT_LT(took, 5s);
}

TEST(HostileTarget, ADaemonAndItsOwnChildAreKilledWhenTheRunEnds) {
  for (const bool hang : {false, true}) {
    const std::string pidfile = tempPath(hang ? "daemon-hang.pids" : "daemon.pids");
    std::filesystem::remove(pidfile);
    std::vector<std::string> args{"setsid-daemon", pidfile};
    if (hang) args.push_back("hang");
    const Supervised s = runTarget(args);
    ASSERT_FALSE(s.harnessError) << describe(s);
    EXPECT_EQ(s.outcome.cls, hang ? OutcomeClass::Hang : OutcomeClass::Pass) << describe(s);
    const std::vector<pid_t> strays = pidsIn(pidfile);
    std::filesystem::remove(pidfile);
    std::filesystem::remove(pidfile + ".target");
    ASSERT_EQ(strays.size(), 2u);
    for (const pid_t stray : strays)
      EXPECT_TRUE(gone(stray)) << "outlived the run: " << stray << (hang ? " (hang)" : "");
  }
}

TEST(HostileTarget, AStrayThatReplacedItsEnvironmentIsKilledToo) {
  const std::string pidfile = tempPath("scrubbed.pids");
  std::filesystem::remove(pidfile);
  const Supervised s = runTarget({"scrubbed-env", pidfile});
  ASSERT_FALSE(s.harnessError) << describe(s);
  const std::vector<pid_t> strays = pidsIn(pidfile);
  std::filesystem::remove(pidfile);
  ASSERT_EQ(strays.size(), 1u);
  EXPECT_TRUE(gone(strays[0])) << "outlived the run: " << strays[0];
}

// Every child carries its run's tag, which its descendants inherit.
TEST(HostileTarget, EveryChildIsTaggedWithItsRun) {
  SupervisionLimits l = runnerLimits();
  const Supervised s =
      supervise(ChildCommand{kFakeRunner, {"--print-env", strays::kTagVariable}}, l);
  ASSERT_FALSE(s.harnessError) << describe(s);
  EXPECT_TRUE(s.outputTail.starts_with(strays::harnessPrefix())) << s.outputTail;
}

// A stray of a run still going is that run's: another run's sweep leaves it (no race between
// --jobs), and it goes when its own run ends. Exit statuses stay with their runs meanwhile.
TEST(HostileTarget, ConcurrentRunsSweepOnlyTheirOwnStrays) {
  const std::string pidfile = tempPath("concurrent.pids");
  std::filesystem::remove(pidfile);
  Supervised longRun;
  // It waits inside operation 1 until the test lets it go: live however slow the others are.
  std::thread first([&] { longRun = runTarget({"setsid-daemon", pidfile, "wait"}, limits(60s)); });
  const std::vector<pid_t> itsStrays = pidsIn(pidfile);
  ASSERT_EQ(itsStrays.size(), 2u);

  std::mutex mutex;
  std::vector<std::string> failures;
  std::vector<std::thread> others;
  for (int t = 0; t < 3; ++t) {
    others.emplace_back([&, t] {
      for (int i = 0; i < 8; ++i) {
        const int kind = (t + i) % 3;
        const Supervised s =
            kind == 0
                ? supervise(ChildCommand{kFakeRunner, {"--setsid-grandchild"}}, runnerLimits())
            : kind == 1 ? supervise(ChildCommand{kFakeRunner, {"--fail-at", "2", "--grandchild"}},
                                    runnerLimits())
                        : supervise(ChildCommand{kFakeRunner, {"--segv-at", "1"}}, runnerLimits());
        const bool ok = !s.harnessError &&
                        (kind == 0   ? s.outcome.cls == OutcomeClass::Pass
                         : kind == 1 ? s.outcome.cls == OutcomeClass::Error && s.exitCode == 1
                                     : s.outcome.cls == OutcomeClass::Crash);
        const pid_t stray = strayPid(s.outputTail);
        const std::lock_guard lock(mutex);
        if (!ok) failures.push_back(describe(s));
        if (stray > 0 && !gone(stray)) failures.push_back("a stray outlived its run");
      }
    });
  }
  for (auto& thread : others)
    thread.join();
  for (const pid_t stray : itsStrays)
    EXPECT_FALSE(gone(stray)) << "another run's sweep took a stray of a live run";
  std::ofstream(pidfile + ".go").put('\n');
  first.join();
  for (const std::string& file : {pidfile, pidfile + ".target", pidfile + ".go"})
    std::filesystem::remove(file);
  EXPECT_EQ(longRun.outcome.cls, OutcomeClass::Pass) << describe(longRun);
  for (const pid_t stray : itsStrays)
    EXPECT_TRUE(gone(stray)) << "outlived its own run";
  for (const auto& failure : failures)
    ADD_FAILURE() << failure;
}

class HostileForked : public ::testing::TestWithParam<bool> {};

TEST_P(HostileForked, AStrayOfAForkedOrFreshChildIsKilledAndNothingIsLeft) {
  SupervisionLimits l = runnerLimits();
  l.forkServer = GetParam();
  for (const auto& extra :
       {std::vector<std::string>{}, std::vector<std::string>{"--hang-at", "2"}}) {
    std::vector<std::string> args{"--setsid-grandchild", "--grandchild", "--print-parent"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Supervised s = supervise(ChildCommand{kFakeRunner, args}, l);
    ASSERT_FALSE(s.harnessError) << describe(s);
    const pid_t stray = strayPid(s.outputTail);
    ASSERT_GT(stray, 0) << s.outputTail;
    EXPECT_TRUE(gone(stray)) << "outlived the run: " << stray;
    const bool ours =
        s.outputTail.find("parent " + std::to_string(::getpid())) != std::string::npos;
    EXPECT_EQ(ours, !GetParam()) << "forked from a server: " << GetParam() << "\n" << s.outputTail;
  }
  ForkServers::stopIdle();
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD) << "a child, zombie or not, is left";
}

INSTANTIATE_TEST_SUITE_P(StartedAfreshAndForked, HostileForked, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "Forked" : "Fresh";
                         });

// --- kill -9 of the harness ----------------------------------------------------------------

/// Starts `argv` (a harness whose target is `setsid-daemon PIDFILE hang`), waits for the
/// daemon, kills the harness with SIGKILL, and expects the target, the daemon, its child and
/// the watchdog (when `watchdogFirst`: the harness prints `watchdog PID` first) to be gone.
void expectNothingOutlivesAKilledHarness(std::vector<std::string> argv, const std::string& pidfile,
                                         bool watchdogFirst) {
  const std::string outPath = tempPath("kill9.out");
  const pid_t harness = startHarness(std::move(argv), outPath);
  ASSERT_GT(harness, 0);
  const std::vector<pid_t> strays = pidsIn(pidfile);
  const std::vector<pid_t> target = pidsIn(pidfile + ".target");
  ::kill(harness, SIGKILL);
  ::waitpid(harness, nullptr, 0);
  // Killed, gpufuzz leaves its work folder, SCRATCH/gpufuzz-XXXXXX with trial-<pid>-N.seq files
  // (ScratchFolder.h).
  const std::string trials = "trial-" + std::to_string(harness) + "-";
  std::error_code ec;
  for (const auto& dir : std::filesystem::directory_iterator(scratchFolder(), ec)) {
    if (!dir.path().filename().string().starts_with("gpufuzz-") || !dir.is_directory(ec)) continue;
    for (const auto& file : std::filesystem::directory_iterator(dir.path(), ec)) {
      if (file.path().filename().string().starts_with(trials)) {
        std::filesystem::remove_all(dir.path(), ec);
        break;
      }
    }
  }
  std::ifstream out(outPath);
  std::string output((std::istreambuf_iterator<char>(out)), {});
  for (const std::string& file : {pidfile, pidfile + ".target", outPath})
    std::filesystem::remove(file);
  ASSERT_EQ(strays.size(), 2u) << output;
  ASSERT_EQ(target.size(), 1u) << output;
  EXPECT_TRUE(goneWithin(target[0], 5s)) << "the target outlived the harness: " << target[0];
  for (const pid_t stray : strays)
    EXPECT_TRUE(goneWithin(stray, 5s)) << "outlived the harness: " << stray;
  if (watchdogFirst) {
    const pid_t watchdog = output.starts_with("watchdog ") ? std::atoi(output.c_str() + 9) : 0;
    ASSERT_GT(watchdog, 0) << output;
    EXPECT_TRUE(goneWithin(watchdog, 5s)) << "the watchdog stays";
  }
}

TEST(HostileTarget, StraysAndTheWatchdogDieWithAHarnessKilledBySigkill) {
  const std::string pidfile = tempPath("kill9.pids");
  std::filesystem::remove(pidfile);
  expectNothingOutlivesAKilledHarness(
      {kSuperviseOnce, "--deadline-ms", "60000", kTarget, "setsid-daemon", pidfile, "hang"},
      pidfile, true);
}

// --- through gpufuzz replay --target --------------------------------------------------------

const std::string kGpufuzz = (testing::binDir() / "gpufuzz").string();

std::string targetWords(const std::vector<std::string>& args) {
  std::string words = kTarget;
  for (const std::string& arg : args)
    words += " " + arg;
  return words;
}

TEST(HostileTargetReplay, AFloodOfOutputKeepsGpufuzzSmall) {
  const std::string seq = sequenceFile("flood", {"create", "draw", "sync"});
  const HarnessRun run = runHarness({kGpufuzz, "replay", "--deadline", "20000", "--target",
                                     targetWords({"flood", "300000000"}), seq});
  std::filesystem::remove(seq);
  EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << run.output;
  EXPECT_NE(run.output.find(": pass (expected pass)"), std::string::npos) << run.output;
  EXPECT_LT(run.maxRssKb, 64 * 1024) << "peak RSS " << run.maxRssKb << " kB";
  std::printf("gpufuzz replay, 300 MB of output: peak RSS %ld kB, %lld ms\n", run.maxRssKb,
              static_cast<long long>(run.wall.count()));
}

TEST(HostileTargetReplay, NoStrayOutlivesGpufuzzReplay) {
  const std::string pidfile = tempPath("replay.pids");
  std::filesystem::remove(pidfile);
  const std::string seq = sequenceFile("daemon", {"create", "draw"});
  const HarnessRun run =
      runHarness({kGpufuzz, "replay", "--target", targetWords({"setsid-daemon", pidfile}), seq});
  const std::vector<pid_t> strays = pidsIn(pidfile);
  for (const std::string& file : {pidfile, pidfile + ".target", seq})
    std::filesystem::remove(file);
  EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << run.output;
  ASSERT_EQ(strays.size(), 2u) << run.output;
  for (const pid_t stray : strays)
    EXPECT_TRUE(goneWithin(stray, 200ms)) << "outlived gpufuzz replay: " << stray;
}

TEST(HostileTargetReplay, NothingOutlivesGpufuzzReplayKilledBySigkill) {
  const std::string pidfile = tempPath("replay-kill9.pids");
  std::filesystem::remove(pidfile);
  const std::string seq = sequenceFile("daemon-hang", {"create", "draw"});
  expectNothingOutlivesAKilledHarness({kGpufuzz, "replay", "--deadline", "60000", "--target",
                                       targetWords({"setsid-daemon", pidfile, "hang"}), seq},
                                      pidfile, false);
  std::filesystem::remove(seq);
}

}  // namespace
}  // namespace gpufuzz
