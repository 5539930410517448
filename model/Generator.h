// Generator.h: random sequences of any lifecycle model that satisfy its preconditions, weighted
// toward the lifecycle shapes that teardown bugs need.
//
// How it is weighted (docs/campaigns.md repeats this for users):
// - Lengths: half the sequences are short (3..12 operations), the rest spread up to --max-ops.
//   Short sequences find ordering bugs fast and shrink in few executions.
// - Operations: each step picks one of the operations that can run now, in proportion to its
//   `weight:`. An operation can run when every used slot has live names of its kind to take,
//   and when the kinds it introduces are below their cap: 4 live names of a kind with no owner,
//   16 of an owned kind. So ending operations, owners ended before or after what they own, and
//   flags set and cleared all occur, as the weights mix them.
// - Names: a used slot takes a live name of its kind, each equally likely; a list slot takes
//   0..4 of them; new names take the kind's prefix and the next number (r0, r1, ...).
// - Arguments: half at the default, most of the rest small (up to twice the default, or 16 above
//   the minimum), one in eight larger (up to 16 times the default, or 256 above the minimum) on
//   a log scale, and one in 256 anywhere in the bounds; words uniformly.
// - Marks (--inject WORDS): on --inject-rate percent of the sequences, one to three operations
//   that declare one of WORDS fail with it, the first such call mostly (docs/failures.md).
// - Threads (--threads N > 1): the same operations as with one thread, then spread over up to N
//   threads by a generator of their own. Each operation, in file order: 3 in 8 go to a thread
//   other than the last one used by an operation of the same family (the resources under one
//   root owner: a context's buffers, a pool's allocations) that shares none of its names, so
//   siblings overlap; 3 in 8 stay on the thread of the last operation on one of its names, so a
//   resource's life mostly stays on one thread; the rest go to any thread. Names are never
//   shared across threads without the file order between them (docs/sequences.md, Threads).
#pragma once

#include <cstdint>

#include <rapidcheck.h>

#include "model/Sequence.h"

namespace gpufuzz {

struct GeneratorConfig {
  /// The model sequences are generated in; null stands for the built-in `renderer`.
  const LifecycleModel* model = nullptr;
  uint32_t maxOps = 40;
  /// Threads to spread each sequence's operations over, 1..kMaxThreads.
  unsigned threads = 1;
  /// The failures --inject marks (docs/failures.md); none: no marks, the sequences unchanged.
  FailWords inject{};
  /// The percentage of sequences that carry marks, 1..100.
  uint32_t injectRate = 20;

  const LifecycleModel& lifecycle() const;
};

/// A generator of valid sequences (operations only, no directives).
rc::Gen<Sequence> genSequence(const GeneratorConfig& config);

/// The sequence that `seed` stands for: the same seed and config give the same sequence.
/// Thread-safe.
Sequence generateSequence(const GeneratorConfig& config, uint64_t seed);

}  // namespace gpufuzz
