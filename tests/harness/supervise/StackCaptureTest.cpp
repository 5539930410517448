// StackCaptureTest.cpp: which debugger takes a stuck child's stacks (gdb, else cuda-gdb on PATH,
// in $CUDA_HOME/bin or /usr/local/cuda/bin), the batch command it is given, and that the
// stacks say which one took them, with stand-in debuggers on a PATH of the test's own. The
// project's runner answers with its own stacks, and no debugger runs.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "harness/supervise/ComputeSanitizer.h"
#include "harness/supervise/CrashSite.h"
#include "harness/supervise/CudaTools.h"
#include "harness/supervise/StackCapture.h"
#include "harness/supervise/Supervisor.h"
#include "tests/ProjectPaths.h"
#include "tests/ScratchDir.h"
#include "tests/harness/supervise/FakeRunnerPath.h"

namespace gpufuzz {
namespace {

using namespace std::chrono_literals;
using testing::ScratchDir;

using testing::kFakeRunner;

/// Sets (or with nullptr unsets) an environment variable for the life of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// Writes an executable `path` holding `text`.
void writeExecutable(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  ::chmod(path.c_str(), 0755);
}

/// A stand-in debugger named `name` in `dir`: it prints who it is, its arguments and one thread's
/// stack in the shape of `thread apply all bt`, using nothing but the shell's builtins (the PATH
/// it runs under may hold nothing else).
std::string writeFakeDebugger(const std::filesystem::path& dir, const std::string& name) {
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / name;
  writeExecutable(path,
                  "#!/bin/sh\n"
                  "echo \"fake " +
                      name +
                      ": $*\"\n"
                      "echo 'Thread 1 (Thread 0x7f0000000000 (LWP 42) \"gpufuzz-runner\"):'\n"
                      "echo '#0  0x00007f0000001234 in pause () from /lib/libc.so.6'\n"
                      "echo '#1  0x0000555500001234 in gpufuzz::stuckHere () at Fake.cpp:7'\n");
  return path.string();
}

TEST(StackCapture, GdbOnPathIsPreferred) {
  ScratchDir dir;
  const std::string gdb = writeFakeDebugger(dir.path(), "gdb");
  writeFakeDebugger(dir.path(), "cuda-gdb");
  const ScopedEnv path("PATH", dir.path().c_str());
  const std::optional<StackDebugger> found = findStackDebugger();
  ASSERT_TRUE(found);
  EXPECT_EQ(found->name, "gdb");
  EXPECT_EQ(found->path, gdb);
}

TEST(StackCapture, WithoutGdbCudaGdbOnPathTakesThem) {
  ScratchDir dir;
  const std::string cudaGdb = writeFakeDebugger(dir.path(), "cuda-gdb");
  const ScopedEnv path("PATH", dir.path().c_str());
  const std::optional<StackDebugger> found = findStackDebugger();
  ASSERT_TRUE(found);
  EXPECT_EQ(found->name, "cuda-gdb");
  EXPECT_EQ(found->path, cudaGdb);
  EXPECT_GT(found->timeout, 10s) << "cuda-gdb sets up CUDA's debugger API as it attaches";
}

TEST(StackCapture, CudaGdbOffPathIsFoundInCudaHome) {
  ScratchDir dir;
  const std::string cudaGdb = writeFakeDebugger(dir.path() / "toolkit" / "bin", "cuda-gdb");
  std::filesystem::create_directories(dir.path() / "empty");
  const ScopedEnv path("PATH", (dir.path() / "empty").c_str());
  const ScopedEnv home("CUDA_HOME", (dir.path() / "toolkit").c_str());
  const std::optional<StackDebugger> found = findStackDebugger();
  ASSERT_TRUE(found);
  EXPECT_EQ(found->path, cudaGdb);
}

TEST(StackCapture, WithNeitherTheToolkitsOwnCudaGdbIsTheLastPlaceLookedIn) {
  ScratchDir dir;
  const ScopedEnv path("PATH", dir.path().c_str());
  const ScopedEnv home("CUDA_HOME", nullptr);
  const std::optional<StackDebugger> found = findStackDebugger();
  const std::string toolkits = "/usr/local/cuda/bin/cuda-gdb";
  if (isExecutable(toolkits)) {  // a machine with the whole toolkit, the GPU machine's
    ASSERT_TRUE(found);
    EXPECT_EQ(found->path, toolkits);
  } else {
    EXPECT_FALSE(found) << found->path;
    // Nothing to take them with: no stacks, and no error.
    EXPECT_EQ(captureStacks(::getpid()), "");
  }
}

TEST(StackCapture, TheBatchCommandAttachesPrintsEveryThreadAndDetaches) {
  const ChildCommand gdb = stackCommand({"gdb", "/usr/bin/gdb", 10s}, 1234);
  EXPECT_EQ(gdb.executable, "/usr/bin/gdb");
  EXPECT_EQ(gdb.args,
            (std::vector<std::string>{"-batch", "-nx", "-iex", "set debuginfod enabled off", "-p",
                                      "1234", "-ex", "thread apply all bt"}));
  // cuda-gdb takes gdb's arguments, and must not stop on a failed CUDA call while attached.
  const ChildCommand cudaGdb =
      stackCommand({"cuda-gdb", "/usr/local/cuda/bin/cuda-gdb", 30s}, 1234);
  EXPECT_EQ(cudaGdb.executable, "/usr/local/cuda/bin/cuda-gdb");
  EXPECT_EQ(cudaGdb.args,
            (std::vector<std::string>{"-batch", "-nx", "-iex", "set debuginfod enabled off", "-iex",
                                      "set cuda api_failures ignore", "-p", "1234", "-ex",
                                      "thread apply all bt"}));
}

TEST(StackCapture, AStuckChildsStacksByCudaGdbSaySo) {
  ScratchDir dir;
  const std::string cudaGdb = writeFakeDebugger(dir.path(), "cuda-gdb");
  const ScopedEnv path("PATH", dir.path().c_str());
  SupervisionLimits limits;
  limits.forkServer = false;
  limits.progressDeadline = 150ms;
  limits.startDeadline = 2s;
  limits.captureStacks = true;
  const Supervised s =
      supervise(ChildCommand{kFakeRunner, {"--ops", "2", "--hang-at", "2"}}, limits);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Hang) << s.outputTail;
  // The first line names the debugger and the process; then what the debugger printed, given
  // the batch command with that process.
  const std::string head = "stacks by cuda-gdb (" + cudaGdb + "), process ";
  ASSERT_EQ(s.stacks.rfind(head, 0), 0U) << s.stacks;
  const std::string pid = s.stacks.substr(head.size(), s.stacks.find('\n') - head.size());
  EXPECT_NE(s.stacks.find("fake cuda-gdb: -batch -nx -iex set debuginfod enabled off -iex set "
                          "cuda api_failures ignore -p " +
                          pid + " -ex thread apply all bt\n"),
            std::string::npos)
      << s.stacks;
  EXPECT_NE(s.stacks.find("\n#1  0x0000555500001234 in gpufuzz::stuckHere () at Fake.cpp:7\n"),
            std::string::npos)
      << s.stacks;
}

TEST(StackCapture, ADebuggerThatCannotStartSaysSoInTheStacks) {
  ScratchDir dir;
  // Executable, but its interpreter does not exist: the start itself fails.
  const std::filesystem::path broken = dir.path() / "cuda-gdb";
  writeExecutable(broken, "#!/nonexistent/interpreter\n");
  const ScopedEnv path("PATH", dir.path().c_str());
  const std::string stacks = captureStacks(::getpid());
  EXPECT_EQ(stacks.rfind("stacks by cuda-gdb (" + broken.string() + "), process " +
                             std::to_string(::getpid()) + "\n(cannot run cuda-gdb: ",
                         0),
            0U)
      << stacks;
}

/// The project's runner on sim, running `seq` under fault plan `plan`, both written in `dir`.
ChildCommand simRunner(const std::filesystem::path& dir, const std::string& seq,
                       const std::string& plan) {
  std::ofstream(dir / "run.seq") << "# gpufuzz sequence\n# model: device\n" << seq;
  std::ofstream(dir / "run.plan") << plan << "\n";
  return ChildCommand{(testing::binDir() / "gpufuzz-runner").string(),
                      {(dir / "run.seq").string(), "--backend", "sim", "--faults",
                       (dir / "run.plan").string(), "--quiet"}};
}

SupervisionLimits runnerLimits() {
  SupervisionLimits limits;
  limits.progressDeadline = 300ms;
  limits.startDeadline = 10s;
  limits.captureStacks = true;
  return limits;
}

/// Whether `frames` has a frame of `function`.
bool hasFrame(const std::vector<CrashFrame>& frames, const std::string& function) {
  return std::any_of(frames.begin(), frames.end(),
                     [&](const CrashFrame& f) { return f.function == function; });
}

// On the GPU machine cuda-gdb crashed attaching to a spinning runner, and the spin kept no
// frames. The runner's own handler needs no debugger: one that is there is not run.
TEST(RunnerStacks, AStuckRunnerGivesItsOwnStacksAndNoDebuggerRuns) {
  ScratchDir dir;
  writeFakeDebugger(dir.path() / "tools", "cuda-gdb");
  const ScopedEnv path("PATH", (dir.path() / "tools").c_str());
  const ScopedEnv cudaHome("CUDA_HOME", nullptr);
  for (const std::string effect : {"hang", "spin"}) {
    const Supervised s = supervise(
        simRunner(dir.path(), "ctx_create c0\nbuf_create c0 b0\n", effect + " at buf_alloc"),
        runnerLimits());
    ASSERT_TRUE(s.stuck) << effect << ": " << s.outputTail;
    EXPECT_EQ(s.stacks.rfind(std::string(kRunnerStacksBy) + ", process ", 0), 0U) << s.stacks;
    EXPECT_EQ(s.stacks.find("fake cuda-gdb"), std::string::npos) << s.stacks;
    const std::vector<CrashFrame> frames = stuckFrames(s.stacks);
    EXPECT_TRUE(hasFrame(frames, "gpufuzz::FaultInjector::before")) << s.stacks;
    EXPECT_TRUE(hasFrame(frames, "gpufuzz::Device::allocBuffer")) << s.stacks;
    // The handler's own frames are cut: the stuck thread's top is where it was stopped.
    EXPECT_EQ(s.stacks.find("onStacksSignal"), std::string::npos) << s.stacks;
  }
}

TEST(RunnerStacks, EveryThreadOfAThreadedRunnerAnswers) {
  ScratchDir dir;
  SupervisionLimits limits = runnerLimits();
  // Each buf_create waits for its thread's ctx_create (threadWaits): both may be in flight.
  limits.expectedWaits = {{}, {}, {0}, {1}};
  const Supervised s = supervise(simRunner(dir.path(),
                                           "@0 ctx_create c0\n@1 ctx_create c1\n"
                                           "@0 buf_create c0 b0\n@1 buf_create c1 b1\n",
                                           "spin at buf_alloc"),
                                 limits);
  ASSERT_TRUE(s.stuck) << s.outputTail;
  ASSERT_EQ(s.stacks.rfind(kRunnerStacksBy, 0), 0U) << s.stacks;
  // Both threads that spin, each under its own heading with the thread's id.
  std::size_t spinning = 0;
  for (std::size_t at = 0; (at = s.stacks.find("\nThread ", at)) != std::string::npos; ++at) {
    const std::size_t next = s.stacks.find("\nThread ", at + 1);
    const std::string thread = s.stacks.substr(at, next == std::string::npos ? next : next - at);
    EXPECT_NE(thread.find("(LWP "), std::string::npos) << thread;
    if (thread.find("gpufuzz::FaultInjector::before") != std::string::npos) ++spinning;
  }
  EXPECT_EQ(spinning, 2U) << s.stacks;
}

TEST(RunnerStacks, ALateRunnerGivesItsOwnStacksAndGoesOn) {
  ScratchDir dir;
  SupervisionLimits limits = runnerLimits();
  limits.progressDeadline = 5s;
  limits.lateDeadline = 100ms;
  const Supervised s = supervise(
      simRunner(dir.path(), "ctx_create c0\nbuf_create c0 b0\n", "delay=600 at buf_alloc"), limits);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Pass) << s.outputTail;
  EXPECT_EQ(s.lateStacks.rfind(kRunnerStacksBy, 0), 0U) << s.lateStacks;
  EXPECT_TRUE(hasFrame(stuckFrames(s.lateStacks), "gpufuzz::FaultInjector::before"))
      << s.lateStacks;
}

// compute-sanitizer runs the runner as its own child: the runner names itself, and answers.
TEST(RunnerStacks, ARunnerUnderASanitizerGivesItsOwnStacks) {
  ScratchDir dir;
  const std::filesystem::path here = testing::sourceDir() / "tests/harness/supervise";
  SupervisionLimits limits = runnerLimits();
  limits.environment = {
      {"GPUFUZZ_FAKE_SANITIZER_REPORT", (here / "sanitizer-reports/clean.txt").string()}};
  const Supervised s = superviseUnderSanitizer(
      simRunner(dir.path(), "ctx_create c0\nbuf_create c0 b0\n", "hang at buf_alloc"), limits,
      SanitizerSetup{SanitizerTool::Memcheck, (here / "fake-compute-sanitizer").string()},
      dir.path() / "sanitizer.log", std::nullopt);
  ASSERT_TRUE(s.stuck) << s.outputTail;
  EXPECT_EQ(s.stacks.rfind(kRunnerStacksBy, 0), 0U) << s.stacks;
  EXPECT_TRUE(hasFrame(stuckFrames(s.stacks), "gpufuzz::FaultInjector::before")) << s.stacks;
}

}  // namespace
}  // namespace gpufuzz
