// ModelRun.h: executes one sequence of a runtime model (docs/models.md) on the executor its
// backend makes (renderer/device/ModelExecutor.h), as SequenceExecutor.h does for the renderer's
// models.
//
// Operations run in file order, or on their threads (`@T`, ThreadLanes.h), free or taking turns
// by `schedule`: the executor's runtime calls overlap (seam::StateLock). Then
// whatever is still alive is released on this thread, kind by kind in the model's release order,
// each kind in creation order; then the executor is asked what the runtime still holds.
// The executor's DeviceError is the outcome `error`, InvalidUse `invalid`, DataMismatch
// `mismatch`, and what it still holds `leak`.
#pragma once

#include "harness/base/RunOutcome.h"
#include "harness/runner/SequenceExecutor.h"
#include "harness/runner/ThreadLanes.h"
#include "model/Sequence.h"
#include "renderer/device/ModelExecutor.h"

namespace gpufuzz {

RunOutcome executeModelSequence(const Sequence& seq, ModelExecutor& executor,
                                ProgressListener& progress,
                                std::optional<ScheduleChoice> schedule = std::nullopt);

}  // namespace gpufuzz
