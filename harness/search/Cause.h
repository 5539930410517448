// Cause.h: what makes two findings one bug. Not the text of their minimal sequences (which
// renderer draws, in which order), but the failure's class and kind of operation, what the
// failure needs (the roles the steps up to the failing one play in the renderer's lifecycle,
// counted: in a 1-minimal sequence every one of them is needed), and, where stacks were taken,
// the top frames of the stuck or crashing thread, as crash reports are bucketed in the field.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "harness/base/RunOutcome.h"
#include "model/Sequence.h"
#include "renderer/TeardownPolicy.h"

namespace gpufuzz {

/// The cause's text: "spin at draw; needs introduces-context x2, queues-work x3; frames ...".
std::string failureCause(const RunOutcome& outcome, const Sequence& minimal, TeardownPolicy policy,
                         const std::string& stacks);

/// The function names of the top `count` frames of the first thread in `stacks` (gdb's `thread
/// apply all bt`) that runs gpufuzz code: the stuck or crashing one. Empty without stacks.
std::vector<std::string> topFrames(const std::string& stacks, std::size_t count);

}  // namespace gpufuzz
