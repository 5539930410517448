// CudaContextRate.cpp: how many contexts the CUDA driver makes and destroys a second, in one
// process and in several at once, and what that allows a campaign on the cuda backend.
//
// Every renderer of a sequence on cuda owns a context (docs/sequences.md), so a campaign's rate is
// at most the driver's context rate divided by the contexts a generated sequence makes. This
// measures both parts, with nothing of the harness in between:
// - `driver`: cuCtxCreate then cuCtxDestroy, the bare pair;
// - `backend`: the cuda backend's context (cuCtxCreate, a stream, the raster module) and its
//   destroy, as a sequence's `create` and `destroy` make them;
// each in P processes at once (forked before anything initialises CUDA), for S seconds; and
// the mean contexts of 10,000 generated sequences of `--ops renderer`, `--max-ops 40`.
//
//   gpufuzz-cuda-context-rate [--seconds S] [--processes 1,2,4,8]
//
// Prints a table, then one JSON object a line ("context_rate": ...) for the record. Exit
// status 2 on bad arguments or where there is no CUDA driver (said so), 1 when a call failed.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "model/Generator.h"
#include "renderer/cuda/CudaBackend.h"
#include "renderer/cuda/CudaDriver.h"
#include "renderer/device/Backend.h"

namespace {

using Clock = std::chrono::steady_clock;

struct ChildCounts {
  long pairs = 0;
  double createMs = 0, destroyMs = 0;  // totals
  double seconds = 0;
  int failed = 0;
};

double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

/// In a child: create and destroy contexts of `kind` until `seconds` have passed.
ChildCounts churn(const std::string& kind, double seconds) {
  ChildCounts c;
  try {
    const gpufuzz::CudaDriver& driver = gpufuzz::cudaDriver();
    CUdevice device = 0;
    if (driver.deviceGet(&device, 0) != CUDA_SUCCESS) throw std::runtime_error("cuDeviceGet");
    std::unique_ptr<gpufuzz::Backend> backend;
    if (kind == "backend") backend = gpufuzz::makeCudaBackend(0);
    const auto pair = [&](bool timed) {
      const auto t0 = Clock::now();
      CUcontext ctx = nullptr;
      gpufuzz::ContextId id = 0;
      if (backend) {
        id = backend->createContext();
      } else if (driver.ctxCreate(&ctx, 0, device) != CUDA_SUCCESS) {
        throw std::runtime_error("cuCtxCreate");
      }
      const double created = msSince(t0);
      const auto t1 = Clock::now();
      if (backend) {
        backend->destroyContext(id);
      } else if (driver.ctxDestroy(ctx) != CUDA_SUCCESS) {
        throw std::runtime_error("cuCtxDestroy");
      }
      if (!timed) return;
      ++c.pairs;
      c.createMs += created;
      c.destroyMs += msSince(t1);
    };
    pair(false);  // the first context of a process pays for the module's first load
    const auto start = Clock::now();
    while (msSince(start) < seconds * 1000.0)
      pair(true);
    c.seconds = msSince(start) / 1000.0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpufuzz-cuda-context-rate: %s: %s\n", kind.c_str(), e.what());
    c.failed = 1;
  }
  return c;
}

struct Row {
  std::string kind;
  int processes = 0;
  ChildCounts total;
  double seconds = 0;  // the longest child's
};

Row measure(const std::string& kind, int processes, double seconds) {
  Row row{kind, processes, {}, 0};
  std::vector<std::pair<pid_t, int>> children;
  for (int p = 0; p < processes; ++p) {
    int fds[2];
    if (pipe(fds) != 0) std::exit(1);
    const pid_t pid = fork();
    if (pid < 0) std::exit(1);
    if (pid == 0) {
      close(fds[0]);
      const ChildCounts c = churn(kind, seconds);
      const bool written = write(fds[1], &c, sizeof c) == static_cast<ssize_t>(sizeof c);
      _exit(written ? 0 : 1);
    }
    close(fds[1]);
    children.emplace_back(pid, fds[0]);
  }
  for (const auto& [pid, fd] : children) {
    ChildCounts c;
    const bool read_ok = read(fd, &c, sizeof c) == static_cast<ssize_t>(sizeof c);
    close(fd);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!read_ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) c.failed = 1;
    row.total.pairs += c.pairs;
    row.total.createMs += c.createMs;
    row.total.destroyMs += c.destroyMs;
    row.total.failed += c.failed;
    row.seconds = std::max(row.seconds, c.seconds);
  }
  return row;
}

/// The mean contexts a generated `--ops renderer` sequence makes.
double contextsPerSequence() {
  const gpufuzz::GeneratorConfig config{&gpufuzz::builtinModel("renderer"), 40};
  constexpr int kSequences = 10'000;
  long contexts = 0;
  for (int i = 0; i < kSequences; ++i) {
    for (const gpufuzz::Operation& op : gpufuzz::generateSequence(config, i).ops) {
      contexts += op.name() == "create" || op.name() == "ctx_create";
    }
  }
  return static_cast<double>(contexts) / kSequences;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "gpufuzz-cuda-context-rate: %s\nusage: gpufuzz-cuda-context-rate [--seconds S] "
               "[--processes 1,2,4,8]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  std::vector<int> processes{1, 2, 4, 8};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return usage(("missing value of " + arg).c_str());
    const std::string value = argv[++i];
    char* end = nullptr;
    if (arg == "--seconds") {
      seconds = std::strtod(value.c_str(), &end);
      if (*end != '\0' || seconds <= 0 || seconds > 600) return usage("--seconds: 0 < S <= 600");
    } else if (arg == "--processes") {
      processes.clear();
      for (const char* p = value.c_str(); *p != '\0';) {
        const long n = std::strtol(p, &end, 10);
        if (end == p || n < 1 || n > 256 || (*end != ',' && *end != '\0')) {
          return usage("--processes: a list such as 1,2,4 of 1..256");
        }
        processes.push_back(static_cast<int>(n));
        p = *end == ',' ? end + 1 : end;
      }
    } else {
      return usage(("unknown option " + arg).c_str());
    }
  }
  // The parent itself never initialises CUDA (its children fork from it); a child checks the
  // driver first, so that a machine without one gets a clear line.
  {
    const Row probe = measure("driver", 1, 0.001);
    if (probe.total.failed) {
      std::fprintf(stderr, "gpufuzz-cuda-context-rate: no usable CUDA driver (see above)\n");
      return 2;
    }
  }
  const double perSequence = contextsPerSequence();
  std::printf("contexts per generated sequence (--ops renderer, --max-ops 40): %.2f\n\n",
              perSequence);
  std::printf(
      "| contexts | processes | pairs | pairs/s | create ms | destroy ms | sequences/s "
      "at most |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  std::vector<Row> rows;
  for (const char* kind : {"driver", "backend"}) {
    for (const int p : processes)
      rows.push_back(measure(kind, p, seconds));
  }
  int failed = 0;
  for (const Row& r : rows) {
    const double rate = r.seconds > 0 ? static_cast<double>(r.total.pairs) / r.seconds : 0;
    const double n = r.total.pairs ? static_cast<double>(r.total.pairs) : 1;
    std::printf("| %s | %d | %ld | %.1f | %.2f | %.2f | %.2f |%s\n", r.kind.c_str(), r.processes,
                r.total.pairs, rate, r.total.createMs / n, r.total.destroyMs / n,
                rate / perSequence, r.total.failed ? " (a call failed)" : "");
    failed += r.total.failed;
  }
  std::printf("\n");
  for (const Row& r : rows) {
    const double n = r.total.pairs ? static_cast<double>(r.total.pairs) : 1;
    std::printf(
        "{\"context_rate\": {\"contexts\": \"%s\", \"processes\": %d, \"pairs\": %ld, "
        "\"seconds\": %.3f, \"create_ms\": %.4f, \"destroy_ms\": %.4f, "
        "\"contexts_per_sequence\": %.3f, \"failed\": %d}}\n",
        r.kind.c_str(), r.processes, r.total.pairs, r.seconds, r.total.createMs / n,
        r.total.destroyMs / n, perSequence, r.total.failed);
  }
  return failed ? 1 : 0;
}
