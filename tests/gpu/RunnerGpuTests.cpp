// RunnerGpuTests.cpp: gpufuzz-runner on a real CUDA device, observed from outside its process.
// A planted hang can only be seen from outside, and a process that called cuInit must not use
// CUDA in a forked child, so this file never touches CUDA itself: every run is a fresh runner
// started with posix_spawn. Without a usable CUDA device the cuda runs exit 2 and every test that
// needs one fails: a GPU run that skipped would look like a pass.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/ProjectPaths.h"
#include "tests/ScratchDir.h"

extern char** environ;

namespace gpufuzz {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

/// The runner next to this executable, else the one in the build that compiled it
/// (tests/ProjectPaths.h): a copied build finds its runner beside it.
fs::path runnerPath() {
  return testing::binDir() / "gpufuzz-runner";
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

using testing::ScratchDir;

/// One runner process. Its stdout and stderr go to files, which can be read while it runs (the
/// runner flushes after every progress line). It runs in its own process group, and whatever is
/// still running when this object goes is killed and reaped.
class RunnerProcess {
 public:
  RunnerProcess(const ScratchDir& dir, const std::vector<std::string>& args) {
    static int serial = 0;
    const std::string stem = "run" + std::to_string(++serial);
    outPath_ = dir.path() / (stem + ".out");
    errPath_ = dir.path() / (stem + ".err");

    std::vector<std::string> argv = {runnerPath().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (std::string& a : argv)
      cargv.push_back(a.data());
    cargv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, outPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 2, errPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    const int rc = posix_spawn(&pid_, cargv[0], &actions, &attr, cargv.data(), environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      pid_ = -1;
      throw std::runtime_error("posix_spawn " + argv[0] + ": " + std::strerror(rc));
    }
  }
  ~RunnerProcess() { kill(); }
  RunnerProcess(const RunnerProcess&) = delete;
  RunnerProcess& operator=(const RunnerProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::string out() const { return readFile(outPath_); }
  std::string err() const { return readFile(errPath_); }
  std::string output() const { return "stdout:\n" + out() + "\nstderr:\n" + err(); }

  /// Reaps the runner if it has ended; its wait status, or nullopt while it runs.
  std::optional<int> poll() {
    if (status_ || pid_ <= 0) return status_;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
    return status_;
  }

  /// Waits until the runner ends or `limit` passes.
  std::optional<int> waitFor(std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    while (!poll() && Clock::now() < deadline)
      std::this_thread::sleep_for(10ms);
    return poll();
  }

  void kill() {
    if (pid_ <= 0 || poll()) return;
    ::kill(-pid_, SIGKILL);
    int status = 0;
    if (waitpid(pid_, &status, 0) == pid_) status_ = status;
  }

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  fs::path outPath_;
  fs::path errPath_;
};

struct RunResult {
  int exitCode = -1;  // -1 when the runner did not exit normally
  std::string out;
  std::string err;
};

/// Runs the runner to its end. Nothing these tests run to the end takes seconds: a runner still
/// going after `limit` is killed and the test fails.
RunResult runToEnd(const ScratchDir& dir, const std::vector<std::string>& args,
                   std::chrono::milliseconds limit = 60s) {
  RunnerProcess p(dir, args);
  const std::optional<int> status = p.waitFor(limit);
  RunResult r;
  if (!status) {
    p.kill();
    ADD_FAILURE() << "the runner did not finish within " << limit.count() << " ms\n" << p.output();
  } else if (WIFEXITED(*status)) {
    r.exitCode = WEXITSTATUS(*status);
  } else if (WIFSIGNALED(*status)) {
    ADD_FAILURE() << "the runner died by signal " << WTERMSIG(*status) << "\n" << p.output();
  }
  r.out = p.out();
  r.err = p.err();
  return r;
}

/// The scheduler state and CPU time (user + system, every thread) of a live process.
struct ProcStat {
  char state = '?';
  double cpuSeconds = 0;
};

std::optional<ProcStat> procStat(pid_t pid) {
  const std::string text = readFile("/proc/" + std::to_string(pid) + "/stat");
  // The command name may hold spaces and parentheses; the fields follow its last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  ProcStat s;
  std::string skip;
  fields >> s.state;
  // Fields 4 to 13 (ppid .. cmajflt), then 14 utime and 15 stime, in clock ticks.
  for (int i = 4; i <= 13; ++i)
    fields >> skip;
  unsigned long long utime = 0;
  unsigned long long stime = 0;
  fields >> utime >> stime;
  if (!fields) return std::nullopt;
  s.cpuSeconds = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return s;
}

/// What a runner stuck in one operation looked like from outside.
struct HangObservation {
  bool reached = false;  // stdout ended inside the operation and the plan had said it hangs
  bool alive = false;    // still running after the watch
  char state = '?';
  double cpuShare = 1;  // CPU seconds per wall second over the watch
  bool quiet = false;   // stdout did not change during the watch
  std::string output;
};

/// Waits up to `deadline` for the runner's stdout to end inside the operation `begun` (the
/// runner prints "   N  op ... " when it starts one and "ok" when it finishes) with the fault
/// plan's farewell line on stderr, then watches it for a second. Leaves it running.
HangObservation observeHang(RunnerProcess& p, const std::string& begun,
                            std::chrono::milliseconds deadline = 10s) {
  HangObservation o;
  const auto giveUp = Clock::now() + deadline;
  while (Clock::now() < giveUp && !p.poll()) {
    if (p.out().ends_with(begun) && p.err().find("fault plan hangs") != std::string::npos) {
      o.reached = true;
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  if (o.reached) {
    const std::string before = p.out();
    const auto t0 = Clock::now();
    const std::optional<ProcStat> s0 = procStat(p.pid());
    std::this_thread::sleep_for(1s);
    const std::optional<ProcStat> s1 = procStat(p.pid());
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s0 && s1) {
      o.state = s1->state;
      o.cpuShare = (s1->cpuSeconds - s0->cpuSeconds) / wall;
    }
    o.quiet = p.out() == before;
  }
  o.alive = !p.poll().has_value();
  o.output = p.output();
  return o;
}

void expectHung(const HangObservation& o, const std::string& what) {
  ASSERT_TRUE(o.reached) << what << ": the runner never got stuck there\n" << o.output;
  EXPECT_TRUE(o.alive) << what << ": the runner ended\n" << o.output;
  EXPECT_EQ(o.state, 'S') << what << ": a hang sleeps\n" << o.output;
  EXPECT_LT(o.cpuShare, 0.05) << what << ": a hang uses almost no CPU\n" << o.output;
  EXPECT_TRUE(o.quiet) << what << ": the runner kept reporting progress\n" << o.output;
  std::cout << "[ hang     ] " << what << ": state " << o.state << ", " << o.cpuShare * 100
            << "% CPU over 1 s, " << (o.alive ? "alive" : "ended") << "\n";
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

/// The runner's closing "outcome: ..." and "expected: ..." lines, or everything it printed.
std::string verdict(const RunResult& r) {
  const size_t at = r.out.find("outcome:");
  return at == std::string::npos ? r.out + r.err : r.out.substr(at);
}

/// Exit status 2 is the runner refusing to start (on cuda: no usable device); nothing else it
/// printed means anything then.
#define ASSERT_RUNNER_STARTED(r) \
  ASSERT_NE((r).exitCode, 2) << "the runner refused to start:\n" << (r).err

// The seed's reproduction, with the expectations the contract gives it on each backend.
constexpr std::string_view kSeedSequence =
    "# gpufuzz sequence\n"
    "# policy: context-first\n"
    "# expect: hang at 3\n"
    "# expect.cuda: error at 2\n"
    "create r0\n"
    "destroy r0\n"
    "create r1\n";

constexpr std::string_view kSeedProgress =
    "   1  create r0 ... ok\n"
    "   2  destroy r0 ... ok\n"
    "   3  create r1 ... ";

/// Runs `seq` on cuda under max-26.5.0, expecting the runner stuck once its stdout ends with
/// `begun` (expectHung, as `what`) and its output to say each of `said`; then runs it to its end
/// under max-26.6.0, the fixed runtime, into `fixed`.
void hangsThenRunsOnTheFixedRuntime(const ScratchDir& dir, const fs::path& seq,
                                    const std::string& begun, const std::string& what,
                                    const std::vector<std::string_view>& said, RunResult& fixed) {
  {
    RunnerProcess p(dir, {"--backend", "cuda", "--faults", "max-26.5.0", seq.string()});
    const HangObservation o = observeHang(p, begun);
    ASSERT_NO_FATAL_FAILURE(expectHung(o, what));
    for (std::string_view part : said) {
      EXPECT_TRUE(contains(o.output, part)) << o.output;
    }
  }
  fixed = runToEnd(dir, {"--backend", "cuda", "--faults", "max-26.6.0", seq.string()});
  ASSERT_RUNNER_STARTED(fixed);
}

TEST(RunnerGpu, TheSeedHangsOnSimInTheSecondCreatesFirstAllocation) {
  // The reference point for the cuda runs below: the seed's runtime, simulated.
  ScratchDir dir;
  const fs::path seq = dir.write("seed.seq", std::string(kSeedSequence));
  RunnerProcess p(dir, {"--backend", "sim", "--faults", "max-26.5.0", seq.string()});
  const HangObservation o = observeHang(p, std::string(kSeedProgress));
  ASSERT_NO_FATAL_FAILURE(expectHung(o, "sim, the seed at 3"));
  EXPECT_TRUE(contains(o.output,
                       "max-26.5.0:2: hang at buf_alloc when first_in_ctx and "
                       "ctx_destroyed_with_live_buffers >= 1"))
      << o.output;
}

TEST(RunnerGpu, OnCudaTheSeedIsAnErrorAtTheDestroyUnderEveryPlan) {
  // cuCtxDestroy frees the renderer's buffers, so context-first's frees fail in the destroy
  // itself: the error surfaces there, and under max-26.5.0 the planted hang is never reached.
  ScratchDir dir;
  const fs::path seq = dir.write("seed.seq", std::string(kSeedSequence));
  for (const char* plan : {"none", "max-26.5.0", "max-26.6.0"}) {
    SCOPED_TRACE(plan);
    const RunResult r = runToEnd(dir, {"--backend", "cuda", "--faults", plan, seq.string()});
    ASSERT_RUNNER_STARTED(r);
    EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "policy context-first")) << r.out;
    EXPECT_TRUE(contains(r.out, "   2  destroy r0 ... FAILED\n")) << r.out;
    EXPECT_TRUE(contains(r.out, "outcome: error at 2 (destroy): cuMemFree: CUDA_ERROR_")) << r.out;
    EXPECT_TRUE(contains(r.out, "expected: error at 2 (met)")) << r.out;
    EXPECT_FALSE(contains(r.out, "create r1")) << r.out;
    if (plan == std::string_view("none")) {
      std::cout << "[ runner   ] " << verdict(r);
    }
  }
}

TEST(RunnerGpu, OnCudaTheShippedDefensesKeepTheSeedAwayFromThePlantedHang) {
  ScratchDir dir;
  const fs::path seq = dir.write("seed.seq", std::string(kSeedSequence));
  const RunResult r = runToEnd(
      dir, {"--backend", "cuda", "--policy", "shipped", "--faults", "max-26.5.0", seq.string()});
  ASSERT_RUNNER_STARTED(r);
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "   3  create r1 ... ok\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "outcome: pass\n")) << r.out;
}

TEST(RunnerGpu, OnCudaAContextDestroyedWithLiveBuffersHangsTheNextRenderersFirstAllocation) {
  // Condition 1 of max-26.5.0 on the real driver. The bare context's buffer is never freed
  // before the hang, so cuda's failing free cannot come first.
  ScratchDir dir;
  const fs::path seq = dir.write("condition1.seq",
                                 "# gpufuzz sequence\n"
                                 "# policy: context-first\n"
                                 "# expect: hang at 4\n"
                                 "# expect.cuda: error at end\n"
                                 "ctx_create c0\n"
                                 "buf_create c0 b0 bytes=4096\n"
                                 "ctx_destroy c0\n"
                                 "create r0\n");
  RunResult r;
  ASSERT_NO_FATAL_FAILURE(hangsThenRunsOnTheFixedRuntime(
      dir, seq,
      "   1  ctx_create c0 ... ok\n"
      "   2  buf_create c0 b0 bytes=4096 ... ok\n"
      "   3  ctx_destroy c0 ... ok\n"
      "   4  create r0 ... ",
      "cuda, condition 1 at 4", {"backend cuda", "max-26.5.0:2: hang at buf_alloc"}, r));
  // The fixed runtime lets the renderer through; the orphan's free at the end is cuda's error.
  EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "   4  create r0 ... ok\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "outcome: error at end (end): cuMemFree: CUDA_ERROR_")) << r.out;
  EXPECT_TRUE(contains(r.out, "expected: error at end (met)")) << r.out;
}

TEST(RunnerGpu, OnCudaAContextDestroyedWithPendingWorkHangsOnlyTheThirdContext) {
  // Condition 2 of max-26.5.0: no-destroy-sync frees the buffers first, so cuda raises no error
  // of its own, and the second renderer still works: only a third context hangs.
  ScratchDir dir;
  const fs::path seq = dir.write("condition2.seq",
                                 "# gpufuzz sequence\n"
                                 "# policy: no-destroy-sync\n"
                                 "# expect: hang at 5\n"
                                 "# expect.cuda: pass\n"
                                 "create r0\n"
                                 "draw r0 triangles=1024 seed=7\n"
                                 "destroy r0\n"
                                 "create r1\n"
                                 "create r2\n");
  RunResult r;
  ASSERT_NO_FATAL_FAILURE(
      hangsThenRunsOnTheFixedRuntime(dir, seq,
                                     "   3  destroy r0 ... ok\n"
                                     "   4  create r1 ... ok\n"
                                     "   5  create r2 ... ",
                                     "cuda, condition 2 at 5",
                                     {"policy no-destroy-sync",
                                      "max-26.5.0:5: hang at buf_alloc when first_in_ctx and "
                                      "ctx_destroyed_with_pending >= 1 and ctx_index >= 2"},
                                     r));
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "   5  create r2 ... ok\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "outcome: pass\nexpected: pass (met)\n")) << r.out;
}

// Renderer and bare operations together. Freeing a buffer after its context's destroy is valid
// on sim (buffers keep their context alive) and cuda's error at 12.
constexpr std::string_view kMixedSequence =
    "# gpufuzz sequence\n"
    "# faults: none\n"
    "# note: renderers and bare contexts side by side\n"
    "# expect: pass\n"
    "# expect.cuda: error at 12\n"
    "create r0 width=37 height=23\n"
    "set_textures r0 count=5 size=7 seed=3\n"
    "draw r0 triangles=200 seed=1\n"
    "ctx_create c0\n"
    "buf_create c0 b0 bytes=4096\n"
    "buf_create c0 b1 bytes=1\n"
    "buf_destroy b1\n"
    "read_back r0\n"
    "create r1 width=1 height=1\n"
    "set_textures r1 count=16 size=1 seed=9\n"
    "ctx_destroy c0\n"
    "buf_destroy b0   # cuda: its memory went with c0\n"
    "draw r1 triangles=1024 seed=2\n"
    "set_textures r0 count=0\n"
    "draw r0 triangles=3 seed=4\n"
    "read_back r0\n"
    "read_back r1\n"
    "destroy r0\n";

// The same kinds of operations in an order both runtimes accept, with the textures replaced
// under queued draws (no-texture-wait) and leftovers released at the end.
constexpr std::string_view kCleanSequence =
    "# gpufuzz sequence\n"
    "# policy: no-texture-wait\n"
    "# faults: none\n"
    "# expect: pass\n"
    "create r0 width=512 height=384\n"
    "set_textures r0 count=16 size=64 seed=5\n"
    "draw r0 triangles=64 seed=11\n"
    "set_textures r0 count=1 size=7 seed=6\n"
    "draw r0 triangles=5 seed=12\n"
    "ctx_create c0\n"
    "buf_create c0 b0 bytes=65536\n"
    "create r1 width=37 height=23\n"
    "draw r1 triangles=1024 seed=13\n"
    "read_back r0\n"
    "sync r1\n"
    "buf_destroy b0\n"
    "ctx_destroy c0\n"
    "read_back r1\n"
    "destroy r1\n"
    "ctx_create c1\n"
    "buf_create c1 b1\n"
    "draw r0 triangles=1 seed=14\n";

TEST(RunnerGpu, AHandWrittenSequenceRunsOnBothBackendsAsItsDirectivesExpect) {
  ScratchDir dir;
  const fs::path mixed = dir.write("mixed.seq", std::string(kMixedSequence));

  const RunResult sim = runToEnd(dir, {"--backend", "sim", mixed.string()});
  ASSERT_RUNNER_STARTED(sim);
  EXPECT_EQ(sim.exitCode, 0) << sim.out << sim.err;
  EXPECT_TRUE(contains(sim.out, "policy shipped, faults none, 18 operations")) << sim.out;
  EXPECT_TRUE(contains(sim.out, "  12  buf_destroy b0 ... ok\n")) << sim.out;
  EXPECT_TRUE(contains(sim.out, "outcome: pass\nexpected: pass (met)\n")) << sim.out;

  const RunResult cuda = runToEnd(dir, {"--backend", "cuda", mixed.string()});
  ASSERT_RUNNER_STARTED(cuda);
  EXPECT_EQ(cuda.exitCode, 1) << cuda.out << cuda.err;
  EXPECT_TRUE(contains(cuda.out, "policy shipped, faults none, 18 operations")) << cuda.out;
  EXPECT_TRUE(contains(cuda.out, "   8  read_back r0 ... ok\n")) << cuda.out;
  EXPECT_TRUE(contains(cuda.out, "  11  ctx_destroy c0 ... ok\n")) << cuda.out;
  EXPECT_TRUE(contains(cuda.out, "outcome: error at 12 (buf_destroy): cuMemFree: CUDA_ERROR_"))
      << cuda.out;
  EXPECT_TRUE(contains(cuda.out, "expected: error at 12 (met)\n")) << cuda.out;
  std::cout << "[ runner   ] " << verdict(cuda);

  const fs::path clean = dir.write("clean.seq", std::string(kCleanSequence));
  for (const char* backend : {"sim", "cuda"}) {
    SCOPED_TRACE(backend);
    const RunResult r = runToEnd(dir, {"--backend", backend, clean.string()});
    ASSERT_RUNNER_STARTED(r);
    EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
    // "backend cuda (NVIDIA H200, ...), policy no-texture-wait": the runner names the device.
    EXPECT_TRUE(contains(r.out, "backend " + std::string(backend) + " (")) << r.out;
    EXPECT_TRUE(contains(r.out, "), policy no-texture-wait")) << r.out;
    EXPECT_TRUE(contains(r.out, " end  release leftovers ... ok\n")) << r.out;
    EXPECT_TRUE(contains(r.out, "outcome: pass\nexpected: pass (met)\n")) << r.out;
  }
}

/// --device-memory (docs/failures.md): with 80 MiB left, the 64 MiB buffers run out for real and
/// the run goes on; the 32 and 16 MiB ones fit.
TEST(RunnerGpu, WithDeviceMemoryBoundTheBigBuffersRunOutForRealAndTheRunPasses) {
  ScratchDir dir;
  const fs::path file = dir.write("dm.seq",
                                  "# model: device\n"
                                  "ctx_create c0\n"
                                  "buf_create c0 b0 bytes=33554432\n"
                                  "buf_create c0 b1 bytes=67108864\n"
                                  "buf_create c0 b2 bytes=16777216\n"
                                  "buf_destroy b0\n"
                                  "buf_create c0 b3 bytes=67108864\n"
                                  "buf_destroy b2\n"
                                  "ctx_destroy c0\n");
  const RunResult r = runToEnd(dir, {"--backend", "cuda-async", "--faults", "none",
                                     "--device-memory", "83886080", file.string()});
  ASSERT_RUNNER_STARTED(r);
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "   3  buf_create c0 b1 bytes=67108864 ... failed for real: "))
      << r.out;
  EXPECT_TRUE(contains(r.out, "   6  buf_create c0 b3 bytes=67108864 ... failed for real: "))
      << r.out;
  EXPECT_TRUE(contains(r.out, "   4  buf_create c0 b2 bytes=16777216 ... ok\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "outcome: pass\nexpected: pass (met)\n")) << r.out;
}

}  // namespace
}  // namespace gpufuzz
