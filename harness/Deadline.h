// Deadline.h: per-operation deadlines. `--deadline auto` calibrates from the latencies operations
// actually show on this backend and machine: an operation is stuck once it makes no progress for
// k times the 99th percentile of recent normal latencies (any operation), never below a floor.
// The percentile, not the maximum, so that a rare planted delay does not raise the deadline past
// itself. A fixed `--deadline MS` overrides. Thread-safe: every worker of a campaign reports
// into one calibrator.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace gpufuzz {

using Millis = std::chrono::milliseconds;

struct DeadlineSettings {
  /// Set for a fixed deadline; unset for `auto`.
  std::optional<Millis> fixed;
  /// Auto: deadline = max(floor, factor x p99 of recent latencies), capped at ceiling.
  uint32_t factor = 20;
  Millis floor{150};
  Millis ceiling{60'000};
  /// Allowance until a child reports its start (process start, driver initialisation).
  Millis start{3'000};
  /// A first deadline miss is re-run with confirmFactor x deadline, at least confirmFloor and at
  /// most twice the ceiling.
  uint32_t confirmFactor = 10;
  Millis confirmFloor{2'000};

  /// The defaults for a backend: a fraction of a second on sim, seconds on cuda.
  static DeadlineSettings forBackend(const std::string& backend);
};

/// Parses `auto` or a number of milliseconds; throws InputError.
std::optional<Millis> parseDeadlineOption(const std::string& text);

class DeadlineCalibrator {
 public:
  explicit DeadlineCalibrator(DeadlineSettings settings) : settings_(settings) {}

  /// An operation of a run that finished made progress after `elapsed`.
  void observe(std::chrono::microseconds elapsed);
  /// The deadline in force now.
  Millis deadline() const;
  /// The much longer deadline a first miss is confirmed under.
  Millis confirmationDeadline() const;
  Millis startDeadline() const { return settings_.start; }
  bool isFixed() const { return settings_.fixed.has_value(); }
  /// "150 ms (auto: 20 x p99 1.20 ms, floor 150 ms)"
  std::string describe() const;

 private:
  static constexpr std::size_t kWindow = 4096;
  std::chrono::microseconds percentile99() const;  // mutex_ held

  DeadlineSettings settings_;
  mutable std::mutex mutex_;
  std::vector<std::chrono::microseconds> recent_;  // a ring of the last kWindow latencies
  std::size_t next_ = 0;
};

}  // namespace gpufuzz
