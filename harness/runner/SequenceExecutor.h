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

/// Runs `seq`: in file order, or on its threads (`@T`, ThreadLanes.h) taking turns by
/// `scheduleSeed` when one is given, freely otherwise; then releases the leftovers on this
/// thread, after every thread finished.
RunOutcome executeSequence(const Sequence& seq, Device& device, TeardownPolicy policy,
                           ProgressListener& progress,
                           std::optional<uint64_t> scheduleSeed = std::nullopt);

}  // namespace gpufuzz
