// SequenceExecutor.h: executes one sequence, in this process, on a device: renderer operations
// through GpuRenderer, bare ones on the device seam; checks every read-back against the
// reference model, releases leftovers as the contract orders, and checks for leaks.
//
// Device errors, mismatches and leaks become the outcome. Hangs, spins and crashes cannot be
// seen from inside: the supervisor of the child process that runs this tells those apart, from
// the progress reported before and after every operation.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "harness/base/RunOutcome.h"
#include "harness/runner/ThreadLanes.h"
#include "model/Sequence.h"
#include "renderer/TeardownPolicy.h"
#include "renderer/device/Device.h"

namespace gpufuzz {

/// Told of the run as it goes; from the operations' threads for a threaded sequence.
class ProgressListener {
 public:
  virtual ~ProgressListener() = default;
  /// Before the first operation: a threaded sequence's threads are made and waiting.
  virtual void start() {}
  virtual void begin(At at, std::string_view op) = 0;
  virtual void done(At at) = 0;
  /// The operation ended as its mark asked: its marked call failed (docs/failures.md).
  virtual void failed(At at, std::string_view detail) = 0;
  /// The operation was not run: it uses a name a failed operation never made. No begin came.
  virtual void skipped(At at) = 0;
};

/// The device call failure a mark asks for (docs/failures.md).
CallFailure callFailureOf(const Mark& mark);

/// How one operation ended: done, failed as its mark asked or for real, or with the run's failure.
struct StepEnd {
  std::optional<RunOutcome> failure;
  bool failedAsMarked = false;
};

/// Operation `i` of `seq`, skipped or run, on the device or on an executor alike: skipped when it
/// uses a name never made (`names.skips(op)`), else run by `step(op, at)`, and `names.ended(i, op,
/// failed)` told how it ended. Its failure, or nothing.
template <typename Names, typename Step>
std::optional<RunOutcome> runOrSkip(const Sequence& seq, std::size_t i, Names& names,
                                    ProgressListener& progress, Step step) {
  const Operation& op = seq.ops[i];
  const At at{static_cast<uint32_t>(i + 1)};
  if (names.skips(op)) {
    progress.skipped(at);
    return std::nullopt;
  }
  StepEnd end = step(op, at);
  if (end.failure) return std::move(end.failure);
  names.ended(i, op, end.failedAsMarked);
  return std::nullopt;
}

/// Runs `seq`: in file order, or on its threads (`@T`, ThreadLanes.h) taking turns by
/// `schedule` when one is given, freely otherwise; then releases the leftovers on this
/// thread, after every thread finished.
RunOutcome executeSequence(const Sequence& seq, Device& device, TeardownPolicy policy,
                           ProgressListener& progress,
                           std::optional<ScheduleChoice> schedule = std::nullopt);

}  // namespace gpufuzz
