// Mutations.h: new sequences made from kept ones, for guided search (docs/search.md). Each
// mutation edits the operations freely, then repairs them under the model: an operation whose
// precondition no longer holds is dropped, with whatever then depends on it. So every mutant is
// valid by construction, any model, threads and marks included.
//
// The edits, as syzkaller mutates programs:
// - insert an operation drawn from the model's generator, its names taken from the sequence;
// - remove an operation, with what depends on it;
// - splice: the sequence up to a point, then another kept sequence from a point, its names its own;
// - repeat a block of operations, the names the block introduces made anew;
// - repeat a name's life: the operations on it and on the names made from it, under new names;
// - change an argument: edge values first (bounds, powers of two and their neighbours, 2^31, 2^32);
// - move an operation to another thread;
// - add, move or drop a mark (--inject words only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/Generator.h"
#include "model/Sequence.h"

namespace gpufuzz {

/// Drops, in order, each operation whose precondition fails where it stands, and keeps at most
/// `maxOps` operations. The result is valid under the sequence's model.
Sequence repaired(const Sequence& seq, uint32_t maxOps);

/// Values at the edges of an argument's bounds, smallest first, without repeats: the minimum and
/// one above, the default, 2^k and 2^k +- 1 inside the bounds, 2^31 and 2^32 and their
/// neighbours, the maximum and one below.
std::vector<uint64_t> edgeValues(uint64_t min, uint64_t max, uint64_t defaultValue);

/// A mutant of `parent` (one to four stacked edits), drawn from `seed`. `donor` is another kept
/// sequence to splice from; it may be `parent` itself. `how`, when given, receives the edits in
/// words ("insert map_write at 3; arg bytes=4096 at 5"). Never empty when `parent` is not.
Sequence mutate(const Sequence& parent, const Sequence& donor, const GeneratorConfig& config,
                uint64_t seed, std::string* how = nullptr);

}  // namespace gpufuzz
