// VulkanOpCosts.cpp: gpufuzz-vulkan-costs, where a persistent runner's time goes on the vulkan
// backend, operation by operation: the campaign's own sequences (--seed's stream, --max-ops, the
// renderer vocabulary) executed one after another on one device in this process, as
// `gpufuzz-runner --persistent` executes them, each operation timed by kind. Prints one line per
// kind (count, total and mean wall-clock time, share of it, and the mean CPU time of the whole
// process, the driver's threads included, which other processes' load on the machine changes far
// less), then the sequences per second; exits 1 when a
// sequence does not pass (the figures would then describe a run cut short). --file runs one
// sequence file N times instead, to time a fixed shape.
//
//   gpufuzz-vulkan-costs [--runs N] [--seed S] [--max-ops M] [--file SEQ] [--validation on|off]
//                        [--device TEXT]
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include <time.h>

#include "harness/campaign/SeedStream.h"
#include "harness/runner/SequenceExecutor.h"
#include "model/Generator.h"
#include "renderer/Backends.h"
#include "renderer/device/Device.h"

namespace {

using namespace gpufuzz;
using Clock = std::chrono::steady_clock;

/// The operations of the built-in model `all`, which every generated sequence here is of.
constexpr std::size_t kKinds = 10;

/// CPU time of the whole process (every thread), in ms.
double cpuMs() {
  timespec now{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

/// Time per operation kind; the release of leftovers at the end counts as "end".
class OpTimer final : public ProgressListener {
 public:
  explicit OpTimer(const Sequence& seq) : seq_(seq) {}

  void begin(At at, std::string_view) override {
    at_ = at;
    cpuStart_ = cpuMs();
    start_ = Clock::now();
  }
  void done(At) override {
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
    const double cpu = cpuMs() - cpuStart_;
    const std::size_t slot =
        at_.isEnd() ? kKinds : defaultModel().op(seq_.ops[at_.ordinal - 1].name())->index;
    totals[slot] += ms;
    cpuTotals[slot] += cpu;
    ++counts[slot];
  }
  // The benchmark's sequences carry no marks: nothing fails on purpose, nothing is skipped.
  void failed(At at, std::string_view) override { done(at); }
  void skipped(At) override {}

  std::array<double, kKinds + 1> totals{};
  std::array<double, kKinds + 1> cpuTotals{};
  std::array<uint64_t, kKinds + 1> counts{};

 private:
  const Sequence& seq_;
  At at_;
  Clock::time_point start_;
  double cpuStart_ = 0;
};

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: gpufuzz-vulkan-costs [--runs N] [--seed S] [--max-ops M] [--file SEQ] "
               "[--validation on|off] [--device TEXT]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t runs = 200;
  uint64_t seed = 1;
  GeneratorConfig config;
  BackendOptions options;
  std::string file;
  for (int i = 1; i < argc; ++i) {
    const bool hasValue = i + 1 < argc;
    if (std::strcmp(argv[i], "--runs") == 0 && hasValue) {
      runs = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--seed") == 0 && hasValue) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--max-ops") == 0 && hasValue) {
      config.maxOps = static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 10));
    } else if (std::strcmp(argv[i], "--validation") == 0 && hasValue) {
      const std::string value = argv[++i];
      if (value != "on" && value != "off") usage();
      options.validation = value == "on";
    } else if (std::strcmp(argv[i], "--file") == 0 && hasValue) {
      file = argv[++i];
    } else if (std::strcmp(argv[i], "--device") == 0 && hasValue) {
      options.device = argv[++i];
    } else {
      usage();
    }
  }
  try {
    const std::optional<Sequence> fixed =
        file.empty() ? std::nullopt : std::optional<Sequence>(loadSequence(file));
    Device device(makeBackend("vulkan", options));
    std::printf("%s\n", device.backendDescription().c_str());
    std::array<double, kKinds + 1> totals{};
    std::array<double, kKinds + 1> cpuTotals{};
    std::array<uint64_t, kKinds + 1> counts{};
    const double cpuStart = cpuMs();
    const auto start = Clock::now();
    for (uint64_t i = 0; i < runs; ++i) {
      const Sequence seq = fixed ? *fixed : generateSequence(config, sequenceSeed(seed, i));
      OpTimer timer(seq);
      const RunOutcome outcome = executeSequence(seq, device, TeardownPolicy::Shipped, timer);
      for (std::size_t k = 0; k <= kKinds; ++k) {
        totals[k] += timer.totals[k];
        cpuTotals[k] += timer.cpuTotals[k];
        counts[k] += timer.counts[k];
      }
      if (outcome.failed()) {
        std::fprintf(stderr, "gpufuzz-vulkan-costs: sequence %llu: %s\n",
                     static_cast<unsigned long long>(i), outcomeText(outcome).c_str());
        return 1;
      }
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const double cpuSeconds = (cpuMs() - cpuStart) / 1e3;
    double all = 0;
    for (double t : totals)
      all += t;
    std::printf("%-13s %8s %10s %9s %6s %11s\n", "operation", "count", "total ms", "mean ms",
                "share", "mean cpu ms");
    for (std::size_t k = 0; k <= kKinds; ++k) {
      if (counts[k] == 0) continue;
      const std::string name = k == kKinds ? "end" : defaultModel().ops[k].name;
      const double count = static_cast<double>(counts[k]);
      std::printf("%-13s %8llu %10.1f %9.3f %5.1f%% %11.3f\n", name.c_str(),
                  static_cast<unsigned long long>(counts[k]), totals[k], totals[k] / count,
                  100 * totals[k] / all, cpuTotals[k] / count);
    }
    std::printf("%llu sequences in %.2f s: %.1f sequences/s (%.1f per CPU second)\n",
                static_cast<unsigned long long>(runs), seconds, static_cast<double>(runs) / seconds,
                static_cast<double>(runs) / cpuSeconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpufuzz-vulkan-costs: %s\n", e.what());
    return 2;
  }
  return 0;
}
