// ThroughputBench.cpp: gpufuzz-bench-throughput, the harness's per-sequence overhead.
//
// Measured in one run, so that the figures are ratios on the same machine at the same time:
// - RawSpawn: posix_spawn + waitpid of gpufuzz-runner doing nothing (`--help`, output to
//   /dev/null): the floor of starting a fresh runner per sequence.
// - Campaign/<backend>/<fork|fresh>/max_ops:M/jobs:J: `gpufuzz fuzz` on a fixed seed, no faults,
//   sequences of at most M operations (1: the harness's own cost per sequence; 40: a campaign as
//   it runs), children forked from a fork server or started afresh; executions per second from
//   its --report. Its
//   counter ratio_to_raw_spawn is campaign executions/s over raw spawns/s: above 1, the campaign
//   (generation, supervision, running the sequence, checking it) beats merely spawning a runner
//   per sequence.
// - Campaign/opencl/...: the same on the opencl backend on pocl (`--device pocl`), where a child
//   pays OpenCL's start-up before its first operation; OpenClStartup/pocl says where that time
//   goes (medians over fresh processes of gpufuzz-opencl-costs: loader, platform start-up, first
//   context, program builds from source and from the kept binary, first renderer).
// The cuda cases run only where `--backend cuda` can start (see `gpufuzz fuzz --backend cuda`),
// the opencl ones where `gpufuzz-runner --probe --backend opencl --device pocl` succeeds.
//
// - Campaign/vulkan-validation-<on|off>/...: the same on the vulkan backend, under the validation
//   layer and without it (where `gpufuzz-runner --probe --backend vulkan` succeeds).
// - VulkanModel/<fork|persistent>/...: the `vulkan` runtime model under the layer against the
//   renderer model on sim, in alternating pairs; ratio_to_sim and both executions/s.
//
// - Campaign/python-sim/<fork|fresh>/...: `gpufuzz fuzz --target "python3
//   examples/targets/pysim/target.py"`, a Python target of the client library on a simulated
//   device in pure Python, with its fork server and started afresh (--python-runs sequences).
// - PythonTarget/sim/max_ops:M/jobs:J: that target against the built-in runner on sim, both
//   forked, in alternating pairs of campaigns of --python-runs sequences; ratio_to_runner is the
//   median ratio of their executions/s (the goal: at least 1/3).
// - Threads/sim/threads:N/max_ops:M/jobs:J: `--threads N` campaigns against `--threads 1` ones
//   on sim, the same seed and so the same operations, in alternating pairs; ratio_to_one_thread
//   is the median ratio of their executions/s (the goal at N = 2: at least 0.8).
//
//   gpufuzz-bench-throughput [--sim-runs N] [--cuda-runs N] [--opencl-runs N] [--vulkan-runs N]
//                            [--python-runs N] [google benchmark flags]
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

int simRuns = 2000;
constexpr int kPersistent = 1000;
int cudaRuns = 40;
int openclRuns = 200;
constexpr const char* kOpenClDevice = "pocl";
int vulkanRuns = 300;
int pythonRuns = 400;  // fresh Python starts run ~12 a second here
// Parallel children contend inside the CUDA driver (context creation serializes); a few
// workers are the sweet spot on one GPU.
constexpr long kCudaJobs = 4;
// Sequences of one operation measure the harness's own cost per sequence; of up to 40 (the
// default), a campaign as it runs.
constexpr long kMaxOps = 40;

fs::path binDir() {
  return fs::read_symlink("/proc/self/exe").parent_path();
}

/// Runs a program with stdout and stderr to /dev/null; its exit status (-1 if it did not run,
/// with errno saying why).
int runQuietly(const std::string& program, const std::vector<std::string>& args) {
  std::vector<char*> argv{const_cast<char*>(program.c_str())};
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  // A loaded machine may refuse a process for a moment: a few tries before giving up.
  for (int tries = 1; (rc == EAGAIN || rc == ENOMEM) && tries < 5; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200 * tries));
    rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  }
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// Raw spawns per second, measured once per process (the denominator of every ratio).
double rawSpawnsPerSecond() {
  static const double rate = [] {
    const std::string runner = (binDir() / "gpufuzz-runner").string();
    constexpr int kSpawns = 300;
    runQuietly(runner, {"--help"});  // warm the page cache
    const auto start = Clock::now();
    for (int i = 0; i < kSpawns; ++i)
      runQuietly(runner, {"--help"});
    return kSpawns / std::chrono::duration<double>(Clock::now() - start).count();
  }();
  return rate;
}

void RawSpawn(benchmark::State& state) {
  const std::string runner = (binDir() / "gpufuzz-runner").string();
  for (auto _ : state) {
    if (runQuietly(runner, {"--help"}) != 0) {
      state.SkipWithError("gpufuzz-runner --help failed");
      return;
    }
  }
  state.counters["spawns_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

/// A number field of a flat JSON report ("executions": 12).
std::optional<double> reportNumber(const std::string& json, const std::string& key) {
  const auto pos = json.find("\"" + key + "\":");
  if (pos == std::string::npos) return std::nullopt;
  return std::strtod(json.c_str() + pos + key.size() + 3, nullptr);
}

/// The Python target of the benchmark, as --target's words.
std::string pythonSimTarget() {
  return std::string(GPUFUZZ_PYTHON) + " " + GPUFUZZ_SOURCE_DIR +
         "/examples/targets/pysim/target.py";
}

/// One `gpufuzz fuzz` of `runs` sequences: {executions, elapsed seconds}, or nullopt (and why in
/// `error`) when it gave no usable report.
std::optional<std::pair<double, double>> runCampaign(const std::string& backend, bool forkServer,
                                                     long maxOps, unsigned jobs, int runs,
                                                     const std::vector<std::string>& backendArgs,
                                                     std::string& error) {
  const fs::path dir =
      fs::temp_directory_path() / ("gpufuzz-bench-" + std::to_string(::getpid()) + "-" + backend);
  fs::remove_all(dir);
  // The seed stream alone: the same sequences for every build, so the figure is the harness's
  // cost. Guided search's mutants take edge values, targets up to 4096 pixels a side on sim,
  // whose cost is the backend's: sim at one operation then ran 195 executions a second, not 897.
  std::vector<std::string> args{"fuzz", "--faults", "none", "--seed", "1", "--search", "blind"};
  if (backend == "python-sim") {
    args.insert(args.end(), {"--target", pythonSimTarget()});
  } else {
    args.insert(args.end(), {"--backend", backend});
  }
  if (backend == "opencl") args.insert(args.end(), {"--device", kOpenClDevice});
  args.insert(args.end(), backendArgs.begin(), backendArgs.end());
  args.insert(args.end(), {"--runs", std::to_string(runs), "--jobs", std::to_string(jobs),
                           "--max-ops", std::to_string(maxOps), "--quiet"});
  args.insert(args.end(),
              {"--out", (dir / "findings").string(), "--report", (dir / "report.json").string()});
  if (!forkServer) args.push_back("--no-fork-server");
  const int status = runQuietly((binDir() / "gpufuzz").string(), args);
  const int spawnError = errno;
  std::ifstream in(dir / "report.json");
  std::stringstream text;
  text << in.rdbuf();
  in.close();
  fs::remove_all(dir);
  const auto execs = reportNumber(text.str(), "executions");
  const auto elapsed = reportNumber(text.str(), "elapsed_s");
  if (status > 1 || !execs || !elapsed || *elapsed <= 0) {
    error = "gpufuzz fuzz (" + backend + ") " +
            (status == -1 ? std::string("could not start: ") + std::strerror(spawnError)
                          : "exited " + std::to_string(status)) +
            " without a usable report";
    return std::nullopt;
  }
  return std::make_pair(*execs, *elapsed);
}

/// The options of a campaign's way of running children: fork (forked from a fork server), fresh
/// (started afresh: the fork server off, added by runCampaign), persistent (--persistent 1000,
/// forked too: the runtime starts once per 1000 sequences).
std::vector<std::string> modeArgs(const std::string& mode) {
  if (mode == "persistent") return {"--persistent", std::to_string(kPersistent)};
  return {};
}

void Campaign(benchmark::State& state, const std::string& backend, bool forkServer,
              const std::vector<std::string>& backendArgs = {}) {
  const auto maxOps = state.range(0);
  const auto jobs = static_cast<unsigned>(state.range(1));
  const int runs = backend == "cuda" || backend == "cuda-async" ? cudaRuns
                   : backend == "opencl"                        ? openclRuns
                   : backend == "vulkan"                        ? vulkanRuns
                   : backend == "python-sim"                    ? pythonRuns
                                                                : simRuns;
  double executions = 0, seconds = 0;
  for (auto _ : state) {
    std::string error;
    const auto result = runCampaign(backend, forkServer, maxOps, jobs, runs, backendArgs, error);
    if (!result) {
      state.SkipWithError(error.c_str());
      break;
    }
    state.SetIterationTime(result->second);
    executions += result->first;
    seconds += result->second;
  }
  if (seconds <= 0) return;
  const double rate = executions / seconds;
  state.counters["execs_per_s"] = rate;
  state.counters["us_per_exec"] = 1e6 / rate;
  state.counters["raw_spawns_per_s"] = rawSpawnsPerSecond();
  state.counters["ratio_to_raw_spawn"] = rate / rawSpawnsPerSecond();
  state.counters["jobs"] = jobs;
  state.counters["max_ops"] = static_cast<double>(maxOps);
}

/// Campaigns of two kinds, `rounds` alternating pairs of `runs` sequences each, so that a change
/// in the machine's load between them (other processes) weighs on both alike: the median over
/// rounds of B's executions/s over A's, and each kind's executions/s over every round. A's and
/// B's arguments to runCampaign: the backend and the extra options.
void alternatingPairs(benchmark::State& state, const std::string& backendA,
                      const std::vector<std::string>& argsA, const std::string& backendB,
                      const std::vector<std::string>& argsB, int runs, const std::string& ratioName,
                      const std::string& nameA, const std::string& nameB) {
  const auto maxOps = state.range(0);
  const auto jobs = static_cast<unsigned>(state.range(1));
  constexpr int kRounds = 5;
  std::vector<double> ratios;
  double execsB = 0, secondsB = 0, execsA = 0, secondsA = 0;
  for (auto _ : state) {
    double iteration = 0;
    for (int round = 0; round < kRounds; ++round) {
      std::string error;
      const auto a = runCampaign(backendA, true, maxOps, jobs, runs, argsA, error);
      const auto b =
          a ? runCampaign(backendB, true, maxOps, jobs, runs, argsB, error) : std::nullopt;
      if (!a || !b) {
        state.SkipWithError(error.c_str());
        return;
      }
      execsA += a->first;
      secondsA += a->second;
      execsB += b->first;
      secondsB += b->second;
      iteration += a->second + b->second;
      ratios.push_back((b->first / b->second) / (a->first / a->second));
    }
    state.SetIterationTime(iteration);
  }
  std::sort(ratios.begin(), ratios.end());
  state.counters[ratioName] = ratios[ratios.size() / 2];
  state.counters["ratio_min"] = ratios.front();
  state.counters["ratio_max"] = ratios.back();
  state.counters[nameB + "_execs_per_s"] = execsB / secondsB;
  state.counters[nameA + "_execs_per_s"] = execsA / secondsA;
  state.counters["jobs"] = jobs;
  state.counters["max_ops"] = static_cast<double>(maxOps);
}

/// PythonTarget: the Python target against the built-in runner on sim, both with the fork server.
/// ratio_to_runner: the Python target's executions/s over the runner's (the goal: at least 1/3).
void PythonTarget(benchmark::State& state) {
  alternatingPairs(state, "sim", {}, "python-sim", {}, pythonRuns, "ratio_to_runner", "runner",
                   "python");
}

/// Threads/sim/threads:N: `--threads N` campaigns against `--threads 1` ones on sim, the same
/// seed, so the same operations (docs/sequences.md, Threads). ratio_to_one_thread: N threads'
/// executions/s over one thread's (the goal at N = 2: at least 0.8).
void Threads(benchmark::State& state, int threads) {
  alternatingPairs(state, "sim", {"--threads", "1"}, "sim", {"--threads", std::to_string(threads)},
                   simRuns, "ratio_to_one_thread", "one_thread", "threaded");
}

/// VulkanModel/<mode>: campaigns of the `vulkan` runtime model (one VkDevice per process) under
/// the validation layer against campaigns of the renderer model on sim, both in `mode`, in
/// alternating pairs. ratio_to_sim: the vulkan model's executions/s over sim's;
/// vulkan_execs_per_s is the figure the goal speaks of (at least 100 a second here).
void VulkanModel(benchmark::State& state, const std::string& mode) {
  std::vector<std::string> args = modeArgs(mode);
  args.insert(args.end(), {"--model", "vulkan", "--validation", "on"});
  alternatingPairs(state, "sim", modeArgs(mode), "vulkan", args, vulkanRuns, "ratio_to_sim", "sim",
                   "vulkan");
}

/// Whether `gpufuzz-runner --probe --backend vulkan` can make the backend (in its own process).
bool vulkanUsable() {
  return runQuietly((binDir() / "gpufuzz-runner").string(), {"--probe", "--backend", "vulkan"}) ==
         0;
}

bool cudaUsable() {
  // The runner reports an unusable device with exit status 2 and says why.
  const fs::path seq =
      fs::temp_directory_path() / ("gpufuzz-bench-probe-" + std::to_string(::getpid()) + ".seq");
  std::ofstream(seq) << "create r0 width=8 height=8\ndestroy r0\n";
  const int status = runQuietly((binDir() / "gpufuzz-runner").string(),
                                {"--backend", "cuda", "--faults", "none", "--quiet", seq.string()});
  fs::remove(seq);
  return status == 0;
}

bool openClUsable() {
  return runQuietly((binDir() / "gpufuzz-runner").string(),
                    {"--probe", "--backend", "opencl", "--device", kOpenClDevice}) == 0;
}

/// The number after `"key": ` in a flat JSON line.
double jsonNumber(const std::string& json, const std::string& key) {
  return reportNumber(json, key).value_or(-1);
}

void OpenClStartup(benchmark::State& state) {
  constexpr int kProcesses = 7;
  const fs::path out =
      fs::temp_directory_path() / ("gpufuzz-opencl-costs-" + std::to_string(::getpid()) + ".json");
  const std::vector<std::string> keys = {"loader_ms",       "platforms_ms",    "context_ms",
                                         "source_build_ms", "binary_build_ms", "first_renderer_ms",
                                         "total_ms"};
  std::vector<std::vector<double>> samples(keys.size());
  for (auto _ : state) {
    for (int i = 0; i < kProcesses; ++i) {
      const auto start = Clock::now();
      if (runQuietly((binDir() / "gpufuzz-opencl-costs").string(), {kOpenClDevice, out.string()}) !=
          0) {
        state.SkipWithError("gpufuzz-opencl-costs failed");
        return;
      }
      state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
      std::ifstream in(out);
      std::stringstream text;
      text << in.rdbuf();
      for (size_t k = 0; k < keys.size(); ++k)
        samples[k].push_back(jsonNumber(text.str(), keys[k]));
    }
  }
  fs::remove(out);
  for (size_t k = 0; k < keys.size(); ++k) {
    std::vector<double>& v = samples[k];
    std::sort(v.begin(), v.end());
    if (!v.empty()) state.counters[keys[k]] = v[v.size() / 2];
  }
}

}  // namespace

/// A case run once, timed by its own clock (campaign seconds), in milliseconds; `args` are its
/// (max_ops, jobs) pairs.
void runsOnce(benchmark::internal::Benchmark* b, const std::vector<std::pair<long, long>>& args) {
  for (const auto& [maxOps, jobs] : args)
    b->Args({maxOps, jobs});
  b->ArgNames({"max_ops", "jobs"})->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
}

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sim-runs") == 0 && i + 1 < argc) {
      simRuns = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--vulkan-runs") == 0 && i + 1 < argc) {
      vulkanRuns = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--cuda-runs") == 0 && i + 1 < argc) {
      cudaRuns = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--python-runs") == 0 && i + 1 < argc) {
      pythonRuns = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--opencl-runs") == 0 && i + 1 < argc) {
      openclRuns = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "gpufuzz-bench-throughput: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  const auto cores = static_cast<long>(std::max(1U, std::thread::hardware_concurrency()));
  benchmark::RegisterBenchmark("RawSpawn", RawSpawn)->UseRealTime()->Unit(benchmark::kMicrosecond);
  // The Python target of the client library: fork and fresh, and against the runner (PythonTarget).
  std::vector<std::string> backends{"sim", "python-sim"};
  runsOnce(benchmark::RegisterBenchmark("PythonTarget/sim", PythonTarget),
           {{1, 1}, {1, cores}, {kMaxOps, 1}, {kMaxOps, cores}});
  // Threaded sequences against the same sequences on one thread (docs/sequences.md, Threads).
  for (const int threads : {2, 4}) {
    runsOnce(benchmark::RegisterBenchmark(
                 ("Threads/sim/threads:" + std::to_string(threads)).c_str(), Threads, threads),
             {{kMaxOps, 1}, {kMaxOps, cores}});
  }
  if (cudaUsable()) {
    backends.push_back("cuda");
    backends.push_back("cuda-async");
  } else {
    std::fprintf(stderr, "gpufuzz-bench-throughput: no usable CUDA device: cuda cases skipped\n");
  }
  if (openClUsable()) {
    backends.push_back("opencl");
    benchmark::RegisterBenchmark("OpenClStartup/pocl", OpenClStartup)
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  } else {
    std::fprintf(stderr, "gpufuzz-bench-throughput: no pocl device: opencl cases skipped\n");
  }
  for (const std::string& backend : backends) {
    for (const std::string mode : {"fork", "fresh", "persistent"}) {
      if (mode == "persistent" && backend == "python-sim") continue;  // a runner's option
      auto* b = benchmark::RegisterBenchmark(
          ("Campaign/" + backend + "/" + mode).c_str(), [backend, mode](benchmark::State& s) {
            Campaign(s, backend, mode != "fresh", modeArgs(mode));
          });
      if (backend == "cuda" || backend == "cuda-async") {
        runsOnce(b, {{kMaxOps, kCudaJobs}});
      } else if (backend == "opencl") {
        runsOnce(b, {{1, cores}, {kMaxOps, 1}, {kMaxOps, cores}});
      } else {
        runsOnce(b, {{1, 1}, {1, cores}, {kMaxOps, 1}, {kMaxOps, cores}});
      }
    }
  }
  // Vulkan (lavapipe here, NVIDIA's on the GPU machine) with and without the validation layer, in
  // the same run as sim so that the rates compare.
  if (vulkanUsable()) {
    for (const std::string validation : {"on", "off"}) {
      for (const std::string mode : {"fork", "fresh", "persistent"}) {
        runsOnce(benchmark::RegisterBenchmark(
                     ("Campaign/vulkan-validation-" + validation + "/" + mode).c_str(),
                     [validation, mode](benchmark::State& s) {
                       std::vector<std::string> args = modeArgs(mode);
                       args.insert(args.end(), {"--validation", validation});
                       Campaign(s, "vulkan", mode != "fresh", args);
                     }),
                 {{1, cores}, {kMaxOps, 1}, {kMaxOps, cores}});
      }
    }
    for (const std::string mode : {"fork", "persistent"}) {
      runsOnce(benchmark::RegisterBenchmark(("VulkanModel/" + mode).c_str(), VulkanModel, mode),
               {{kMaxOps, 1}, {kMaxOps, cores}});
    }
  } else {
    std::fprintf(stderr,
                 "gpufuzz-bench-throughput: vulkan backend unusable: vulkan cases skipped\n");
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
