// SimBackend.h: a deterministic CPU device with the seed runtime's semantics, used wherever there
// is no GPU and wherever a result must not depend on timing.
//
// Rules (renderer/sim/README.md says them for users):
// - Enqueued commands (uploads, launches) complete only when their context's queue is waited for:
//   synchronize, copyToHost, or destroyContext (the queue drains). Nothing depends on threads.
// - Buffers keep their context alive: destroyContext with live buffers releases the handle, the
//   buffers become orphaned and may still be freed; the context's memory goes with its last buffer.
// - freeBuffer while a queued command references the buffer frees it in stream order: the free
//   is queued on the owner's queue behind that work, as the seed's runtime does.
// - A command that touches memory already released fails, when it executes, with a use-after-free
//   device error (what compute-sanitizer reports on real hardware).
// - Device memory is accounted exactly (nominal sizes; host storage is materialized lazily, so a
//   2 GiB bare buffer costs nothing until touched) against a fixed capacity.
#pragma once

#include <memory>

#include "renderer/device/Backend.h"

namespace gpufuzz {

struct SimLimits {
  /// Device memory the sim pretends to have.
  uint64_t capacityBytes = 64ULL << 30;
  /// Memory a context holds for itself (its queue, its module), so a leaked context shows.
  uint64_t contextBytes = 64ULL << 10;
};

std::unique_ptr<Backend> makeSimBackend(SimLimits limits = {});

}  // namespace gpufuzz
