// Cause.h: what makes two findings one bug. Not the text of their minimal sequences (which
// renderer draws, in which order), but the failure's class and kind of operation, what the
// failure needs (the roles the steps up to the failing one play in the renderer's lifecycle,
// counted: in a 1-minimal sequence every one of them is needed), and, where stacks were taken,
// the top frames of the stuck thread, as crash reports are bucketed in the field. A crash with
// frames is its class and crash state alone: reached from other operations, it is one bug.
// A failure a fault-plan rule planted has that rule for its cause: a rule acts on a device call
// that several kinds of operation make, and its conditions can come to hold in several ways,
// each a 1-minimal witness of its own; they are one planted bug.
// An error or a checker's report (invalid) that says what went wrong is its class, its kind of
// operation and those words, its run's names and numbers masked: the runtime's own verdict.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "harness/base/RunOutcome.h"
#include "model/Sequence.h"
#include "renderer/TeardownPolicy.h"

namespace gpufuzz {

/// The cause's text: "spin at draw; needs introduces-context x2, queues-work x3; frames ...",
/// with "; create fails with oom" for each kind of marked operation it needs (failures.md);
/// for a crash with frames (supervise/CrashSite.h), only its crash state, whatever operation it
/// came at: "crash; frames chunk_unlink pool_free_all pool_release"; so is a target's hang or
/// spin whose own client answered the stacks signal: "hang; frames submit handle run";
/// for a failure a fault-plan rule planted (RunOutcome::fault), the class and the rule:
/// "hang planted by two-hangs.plan:2: hang at ctx_destroy when live_buffers >= 4";
/// for an error or invalid outcome with a detail, its verdict whatever operation it came at:
/// "error; says clSetUserEventStatus ?: CL_INVALID_OPERATION, where ..." (verdictCause). A threaded
/// minimal sequence's cause says "; concurrent" after the class and place (or the rule).
std::string failureCause(const RunOutcome& outcome, const Sequence& minimal, TeardownPolicy policy,
                         const std::string& stacks);

/// What an error's or a checker's verdict says of its fault, without what varies with the
/// sequence: "says clReleaseEvent ?: CL_INVALID_EVENT", its names, numbers, the words that
/// agree with them and the operation's place masked; for a wait that returned before its work
/// was done, through whichever call, "a wait on a queue returned before its work was done".
std::string verdictCause(const std::string& verdict);

/// The function names of the top `count` frames of the stuck thread of `stacks` (stuckFrames),
/// "??" for one without a name. Empty without stacks.
std::vector<std::string> topFrames(const std::string& stacks, std::size_t count);

}  // namespace gpufuzz
