// Deadline.cpp: deadline calibration.
#include "harness/supervise/Deadline.h"

#include <algorithm>
#include <cstdio>

#include "base/InputError.h"
#include "harness/base/RunOutcome.h"
#include "harness/supervise/Supervisor.h"

namespace gpufuzz {

namespace {

/// A backend's deadlines where they differ from sim's (the defaults of DeadlineSettings).
struct BackendDeadlines {
  const char* backend;
  uint32_t factor;
  Millis floor, uncalibrated, ceiling, start;
  uint32_t confirmFactor;
  Millis confirmFloor;
};

const BackendDeadlines kBackendDeadlines[] = {
    // Context create ~110-145 ms, destroy ~55-75 ms, with queued work up to ~640 ms; cuInit in a
    // fresh process 100-240 ms (bench/RESULTS.md, "The driver's context rate" and "Harness
    // throughput"). The driver makes contexts one at a time for every process, so a child's
    // operation waits behind the others' (2 jobs: p99 by kind 0.1-0.3 s, over every kind 0.4 s;
    // bench/RESULTS.md): a tail bounded by the jobs, not the heavy one of a shared VM's
    // scheduler, which 5 x p99 covers. A floor of 1 s, not 3 s, and a long confirmation of 10 s,
    // not 20 s: a hang is seen in 1-2 s and confirmed in 10.
    // Until 32 operations were seen the deadline stays at 3 s.
    {"cuda", 5, Millis{1'000}, Millis{3'000}, Millis{30'000}, Millis{20'000}, 4, Millis{10'000}},
    // A context is a stream and a pool: microseconds (cuStreamCreate 0.003 ms, cuMemPoolCreate
    // 0.02 ms, alloc/free with a wait ~0.05 ms); kernels as on cuda. A fresh process pays cuInit
    // and the primary context's retain, ~250-350 ms, more with children contending in the driver:
    // the start deadline covers that, the per-operation floor does not need to.
    {"cuda-async", 20, Millis{1'000}, Millis{0}, Millis{30'000}, Millis{10'000}, 4, Millis{10'000}},
    // pocl: platform start-up 30-200 ms, a program build from source ~450 ms cold (then kept on
    // disk: RasterProgram.h), more on a loaded machine.
    {"opencl", 20, Millis{2'000}, Millis{0}, Millis{60'000}, Millis{10'000}, 10, Millis{5'000}},
    // lavapipe shades ~25 M pixel-triangles/s on two cores: a 512 x 512 draw of 1024
    // triangles takes ~10 s; instance + device under the layer ~15-100 ms (platform.md).
    {"vulkan", 20, Millis{2'000}, Millis{0}, Millis{120'000}, Millis{20'000}, 4, Millis{30'000}},
    // A target of docs/target.md: unknown work, perhaps an interpreter's start-up (CPython with
    // NumPy and an OpenCL or CUDA binding imports in 0.3-2 s) and a device opened in every child.
    {"target", 20, Millis{1'000}, Millis{0}, Millis{60'000}, Millis{30'000}, 4, Millis{10'000}},
};

/// A runtime model's deadlines where its operations cost more than its backend's renderer ones.
struct ModelDeadlines {
  const char* model;
  Millis uncalibrated;
};

const ModelDeadlines kModelDeadlines[] = {
    // The cuda-driver model creates driver contexts on cuda-async too. Its first cuCtxCreate in a
    // fresh process pays the driver's start-up, which takes seconds, so 1 s would call it slow.
    {"cuda-driver", Millis{5'000}},
};

}  // namespace

DeadlineSettings DeadlineSettings::forBackend(const std::string& backend, std::string_view model) {
  DeadlineSettings s;
  for (const BackendDeadlines& d : kBackendDeadlines) {
    if (backend != d.backend) continue;
    s.factor = d.factor;
    s.floor = d.floor;
    s.uncalibrated = d.uncalibrated;
    s.ceiling = d.ceiling;
    s.start = d.start;
    s.confirmFactor = d.confirmFactor;
    s.confirmFloor = d.confirmFloor;
  }
  for (const ModelDeadlines& m : kModelDeadlines) {
    if (model == m.model) s.uncalibrated = std::max(s.uncalibrated, m.uncalibrated);
  }
  return s;
}

std::optional<Millis> parseDeadlineOption(const std::string& text) {
  if (text == "auto") return std::nullopt;
  if (text.empty() || text.size() > 9 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw InputError("--deadline: '" + text + "' is neither 'auto' nor a number of milliseconds");
  }
  const long ms = std::stol(text);
  if (ms < 1) throw InputError("--deadline: must be at least 1 ms");
  return Millis{ms};
}

void DeadlineCalibrator::Ring::add(std::chrono::microseconds elapsed, std::size_t capacity) {
  if (samples.size() < capacity) {
    samples.push_back(elapsed);
  } else {
    samples[next] = elapsed;
    next = (next + 1) % capacity;
  }
  ++addedSinceCached;
}

std::chrono::microseconds DeadlineCalibrator::Ring::percentile99() const {
  if (samples.empty()) return std::chrono::microseconds{0};
  if (cachedP99 && addedSinceCached < std::max<std::size_t>(1, samples.size() / 32)) {
    return *cachedP99;
  }
  std::vector<std::chrono::microseconds> sorted = samples;
  const std::size_t rank = (sorted.size() * 99) / 100;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(rank),
                   sorted.end());
  cachedP99 = sorted[rank];
  addedSinceCached = 0;
  return *cachedP99;
}

void DeadlineCalibrator::observe(std::string_view op, std::chrono::microseconds elapsed) {
  std::lock_guard lock(mutex_);
  if (op != kEndOperation) recent_.add(elapsed, kWindow);
  auto it = byKind_.find(op);
  if (it == byKind_.end()) it = byKind_.emplace(std::string(op), Ring{}).first;
  it->second.add(elapsed, kKindWindow);
}

Millis DeadlineCalibrator::scaled(std::chrono::microseconds p99) const {
  const auto deadline = std::chrono::duration_cast<Millis>(p99 * settings_.factor);
  return std::clamp(deadline, settings_.floor, settings_.ceiling);
}

Millis DeadlineCalibrator::confirmationOf(Millis deadline) const {
  if (settings_.confirmFixed) return std::max(*settings_.confirmFixed, deadline);
  return std::clamp(deadline * settings_.confirmFactor, settings_.confirmFloor,
                    std::max(settings_.confirmFloor, settings_.ceiling * 2));
}

Millis DeadlineCalibrator::deadline() const {
  if (settings_.fixed) return *settings_.fixed;
  std::lock_guard lock(mutex_);
  return overallLocked();
}

Millis DeadlineCalibrator::overallLocked() const {
  const Millis calibrated = scaled(recent_.percentile99());
  if (recent_.samples.size() >= kKindMinimum) return calibrated;
  return std::max(calibrated, settings_.uncalibrated);
}

Millis DeadlineCalibrator::confirmationDeadline() const {
  return confirmationOf(deadline());
}

Millis DeadlineCalibrator::deadlineFor(std::string_view op) const {
  return deadlineOf(kindDeadlines(), op, deadline());
}

DeadlineCalibrator::ByKind DeadlineCalibrator::kindDeadlines() const {
  ByKind out;
  if (settings_.fixed) return out;
  std::lock_guard lock(mutex_);
  const Millis overall = overallLocked();
  for (const auto& [op, ring] : byKind_) {
    const KindFigures f = figuresLocked(ring, overall);
    if (f.own) out.emplace(op, f.deadline);
  }
  return out;
}

DeadlineCalibrator::KindFigures DeadlineCalibrator::figuresLocked(const Ring& ring,
                                                                  Millis overall) const {
  const std::chrono::microseconds p99 = ring.percentile99();
  const Millis deadline = scaled(p99);
  return {p99, deadline, ring.samples.size() >= kKindMinimum || deadline > overall};
}

DeadlineCalibrator::ByKind DeadlineCalibrator::kindConfirmationDeadlines() const {
  ByKind out = kindDeadlines();
  for (auto& [op, deadline] : out)
    deadline = confirmationOf(deadline);
  return out;
}

std::string DeadlineCalibrator::describe() const {
  char text[224];
  if (settings_.fixed) {
    std::snprintf(text, sizeof text, "%lld ms (fixed)",
                  static_cast<long long>(settings_.fixed->count()));
    return text;
  }
  std::chrono::microseconds p99;
  {
    std::lock_guard lock(mutex_);
    p99 = recent_.percentile99();
  }
  const ByKind kinds = kindDeadlines();
  const Millis overall = deadline();
  const bool allOverall = std::all_of(kinds.begin(), kinds.end(),
                                      [&](const auto& kind) { return kind.second == overall; });
  std::string range;
  if (!allOverall) {
    const auto [low, high] =
        std::minmax_element(kinds.begin(), kinds.end(),
                            [](const auto& a, const auto& b) { return a.second < b.second; });
    range = ", by kind " + std::to_string(low->second.count()) + ".." +
            std::to_string(high->second.count()) + " ms";
  }
  std::snprintf(text, sizeof text, "%lld ms (auto: %u x p99 %.2f ms, floor %lld ms%s)",
                static_cast<long long>(overall.count()), settings_.factor,
                static_cast<double>(p99.count()) / 1000.0,
                static_cast<long long>(settings_.floor.count()), range.c_str());
  return text;
}

std::string DeadlineCalibrator::describeKinds() const {
  if (settings_.fixed) return "";
  std::lock_guard lock(mutex_);
  std::string own, overall;
  char text[160];
  const Millis overallDeadline = overallLocked();
  for (const auto& [op, ring] : byKind_) {
    const KindFigures f = figuresLocked(ring, overallDeadline);
    if (!f.own) {
      std::snprintf(text, sizeof text, "%s%s (%zu)", overall.empty() ? "" : ", ", op.c_str(),
                    ring.samples.size());
      overall += text;
      continue;
    }
    std::snprintf(text, sizeof text, "%s%s %lld ms (p99 %.2f ms of %zu)", own.empty() ? "" : ", ",
                  op.c_str(), static_cast<long long>(f.deadline.count()),
                  static_cast<double>(f.p99.count()) / 1000.0, ring.samples.size());
    own += text;
  }
  return overall.empty() ? own : own + (own.empty() ? "" : "; ") + "overall: " + overall;
}

}  // namespace gpufuzz
