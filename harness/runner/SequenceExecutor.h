// SequenceExecutor.h: executes one sequence, in this process, on a device: renderer operations
// through GpuRenderer, bare ones on the device seam; checks every read-back against the
// reference model, releases leftovers as the contract orders, and checks for leaks.
//
// Device errors, mismatches and leaks become the outcome. Hangs, spins and crashes cannot be
// seen from inside: the supervisor of the child process that runs this tells those apart, from
// the progress reported before and after every operation.
#pragma once

#include <string_view>

#include "harness/base/RunOutcome.h"
#include "model/Sequence.h"
#include "renderer/TeardownPolicy.h"
#include "renderer/device/Device.h"

namespace gpufuzz {

class ProgressListener {
 public:
  virtual ~ProgressListener() = default;
  virtual void begin(At at, std::string_view op) = 0;
  virtual void done(At at) = 0;
};

RunOutcome executeSequence(const Sequence& seq, Device& device, TeardownPolicy policy,
                           ProgressListener& progress);

}  // namespace gpufuzz
