// Deadline.h: per-operation deadlines. `--deadline auto` calibrates from the latencies operations
// actually show on this backend and machine: an operation is stuck once it makes no progress for
// k times the 99th percentile of recent normal latencies, never below a floor. Once enough
// operations of a kind were seen, that kind has its own deadline from its own latencies (a
// context creation on cuda takes 100 times a buffer's: one deadline for both would be either
// too short for one or slow to see the other hang); until then, and between operations, the
// deadline over every kind of the sequences' operations applies, or what the kind's own few
// samples ask for where that is more. `end`, the release of what a sequence left, is not one of
// them: it releases several objects at once (on cuda the slowest kind by far, p99 0.6 s against
// 0.3 s), and in the deadline over every kind it would set the deadline of every kind not yet
// calibrated.
// The percentile, not the maximum, so that a rare planted delay does not raise the deadline past
// itself. A fixed `--deadline MS` overrides. Thread-safe: every worker of a campaign reports
// into one calibrator.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
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
  /// Until `kKindMinimum` operations of any kind were seen, the deadline over every kind is at
  /// least this: a p99 of a handful of samples says little about a backend whose operations'
  /// costs span three orders of magnitude (cuda), and the first sequences of a campaign meet
  /// its costliest start. Zero: the floor alone.
  Millis uncalibrated{0};
  /// Allowance until a child reports its start (process start, driver initialisation).
  Millis start{3'000};
  /// A first deadline miss is re-run with confirmFactor x deadline, at least confirmFloor and at
  /// most twice the ceiling.
  uint32_t confirmFactor = 10;
  Millis confirmFloor{2'000};
  /// Set by `--confirm-deadline MS`: every confirmation runs under this, or under the deadline
  /// it confirms where that is longer. For targets whose hangs are known to block for good.
  std::optional<Millis> confirmFixed;

  /// The defaults for a backend: a fraction of a second on sim, seconds on cuda. A runtime model
  /// whose operations cost more than the backend's own (`model`, a model's name) raises them.
  static DeadlineSettings forBackend(const std::string& backend, std::string_view model = {});
};

/// Parses `auto` or a number of milliseconds; throws InputError.
std::optional<Millis> parseDeadlineOption(const std::string& text);

class DeadlineCalibrator {
 public:
  explicit DeadlineCalibrator(DeadlineSettings settings) : settings_(settings) {}

  using ByKind = std::map<std::string, Millis, std::less<>>;

  /// An operation (of kind `op`) of a run that finished made progress after `elapsed`.
  void observe(std::string_view op, std::chrono::microseconds elapsed);
  /// The deadline in force now, over every kind of operation (not `end`): between operations and
  /// for kinds not yet calibrated.
  Millis deadline() const;
  /// The much longer deadline a first miss is confirmed under.
  Millis confirmationDeadline() const;
  /// The deadline of an operation of kind `op`.
  Millis deadlineFor(std::string_view op) const;
  /// The kinds with deadlines of their own, and those deadlines; or their confirmation
  /// deadlines. A kind seen fewer than kKindMinimum times has one only where its samples ask for
  /// more than the overall deadline.
  ByKind kindDeadlines() const;
  ByKind kindConfirmationDeadlines() const;
  Millis startDeadline() const { return settings_.start; }
  bool isFixed() const { return settings_.fixed.has_value(); }
  /// "150 ms (auto: 20 x p99 1.20 ms, floor 150 ms)"
  std::string describe() const;
  /// Each kind with a deadline of its own: "buf_create 1000 ms (p99 12.30 ms of 540), ..."; the
  /// kinds still under the overall deadline after them: "; overall: end (12)". Empty when fixed.
  std::string describeKinds() const;

 private:
  /// The last `capacity` latencies.
  struct Ring {
    std::vector<std::chrono::microseconds> samples;
    std::size_t next = 0;
    void add(std::chrono::microseconds elapsed, std::size_t capacity);
    /// Recomputed once a 32nd of the ring is new, and at every new sample below 64: a selection
    /// over 1,024 samples per query was 18% of a campaign's CPU, and one sample in 32 moves
    /// the p99 little.
    std::chrono::microseconds percentile99() const;
    mutable std::optional<std::chrono::microseconds> cachedP99;
    mutable std::size_t addedSinceCached = 0;
  };
  static constexpr std::size_t kWindow = 4096;
  static constexpr std::size_t kKindWindow = 1024;
  /// Operations of a kind seen before it gets a deadline of its own.
  static constexpr std::size_t kKindMinimum = 32;
  Millis scaled(std::chrono::microseconds p99) const;
  Millis overallLocked() const;  // deadline(), mutex_ held
  /// What a kind's samples say: their p99, the deadline it scales to, and whether that is the
  /// kind's own (seen kKindMinimum times, or asking for more than `overall`). mutex_ held.
  struct KindFigures {
    std::chrono::microseconds p99;
    Millis deadline;
    bool own;
  };
  KindFigures figuresLocked(const Ring& ring, Millis overall) const;
  Millis confirmationOf(Millis deadline) const;

  DeadlineSettings settings_;
  mutable std::mutex mutex_;
  Ring recent_;  // every kind's but `end`'s
  std::map<std::string, Ring, std::less<>> byKind_;
};

}  // namespace gpufuzz
