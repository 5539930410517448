// SequenceEdits.h: single edits of a sequence that keep it valid under the model: removing an
// operation (with everything that depends on it), simplifying an argument, inserting a step.
// The shrinker searches over removals and simplifications; the explainer runs every edit once.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/Sequence.h"

namespace gpufuzz {

struct Edit {
  /// Merge: every use of one name retargeted to an earlier live name of the same kind, so that its
  /// introduction (and release) can go; Swap: two neighbouring operations exchanged, toward the
  /// canonical order (operations grouped by the name they concern, in order of introduction).
  /// RemoveRange: `value` operations from `index` on, with whatever depends on them (the
  /// shrinker's first steps on a long sequence, such as a persistent process's history).
  /// OneThread: every operation on thread 0; MergeThreads: thread `index`'s operations moved to
  /// thread `value`; ToThreadZero: operation `index` to thread 0 (docs/sequences.md, Threads).
  /// Unmark: operation `index` without its mark; MarkNth: its mark counting to `value` instead
  /// (docs/failures.md: a shrink removes marks and lowers N).
  enum class Kind : uint8_t {
    Remove,
    Simplify,
    Insert,
    Merge,
    Swap,
    RemoveRange,
    OneThread,
    MergeThreads,
    ToThreadZero,
    Unmark,
    MarkNth,
  };
  Kind kind = Kind::Remove;
  /// Remove: the 0-based index of the operation removed; Simplify: of the operation changed;
  /// Insert: the position the new operation takes; Merge: the introduction removed; Swap: the
  /// first of the two exchanged.
  std::size_t index = 0;
  /// Simplify: the argument ("triangles") and its new value; Insert: the inserted operation;
  /// Merge: the name folded (`argument`) and the one it is folded into (`into`).
  std::string argument;
  uint64_t value = 0;
  Operation inserted;
  std::string into;
  /// For people: "remove 3 (destroy r0)", "triangles=1 at 2", "insert sync r0 before 3",
  /// "use r0 for r1 (drops 4 (create r1))", "swap 3 (draw r1) and 4 (draw r0)".
  std::string describe(const Sequence& before) const;
};

/// Whether the operations satisfy the model's preconditions.
bool isValid(const Sequence& seq);

/// The sequence without operation `index` and whatever then becomes invalid (removing a
/// `create r0` removes every operation on r0; removing a `ctx_create c0` removes its buffers'
/// operations too). An operation holding a dead name only in its list slot stays, without it.
/// Directives are kept.
Sequence removeOperation(const Sequence& seq, std::size_t index);

/// The operations `index` depends on or that depend on it, beside itself: what removal takes out.
std::vector<std::size_t> removalSet(const Sequence& seq, std::size_t index);

/// The sequence without operations [first, first + count) and whatever then becomes invalid, as
/// removeOperation for each of them; nullopt when that leaves it invalid or unchanged.
std::optional<Sequence> removeRange(const Sequence& seq, std::size_t first, std::size_t count);

/// The arguments of an operation, with their current values: ("triangles", 9), ("seed", 3).
std::vector<std::pair<std::string, uint64_t>> argumentsOf(const Operation& op);
/// Sets a named argument; false when `op` has no such argument.
bool setArgument(Operation& op, const std::string& argument, uint64_t value);
/// Simpler values to try for an argument, simplest first (its minimum, its default, halfway).
std::vector<uint64_t> simplerValues(const Operation& op, const std::string& argument);
/// A few other values for an argument, to learn whether it matters (explain).
std::vector<uint64_t> probeValues(const Operation& op, const std::string& argument);

/// Every single removal, largest first; for a threaded sequence, every operation on one thread,
/// each thread merged into thread 0 or into the one before it, each operation moved to thread 0;
/// every merge of a name into an earlier one of its kind (fewest operations first); every
/// single-argument simplification; every mark removed, and every mark's N lowered; then every
/// swap of neighbours out of canonical order.
/// Removals, merges and simplifications make a sequence smaller or simpler, thread edits lower
/// its threads' count or numbers, and each swap removes one inversion of a fixed order, so
/// repeating the accepted edits ends.
std::vector<std::pair<Edit, Sequence>> shrinkCandidates(const Sequence& seq);

/// The sequence with every use of `name` (introduced by operation `index`) taken by `into`,
/// an earlier-introduced name of the same kind, and `name`'s introduction and release removed;
/// nullopt when the result breaks a precondition (`into` released before a use).
std::optional<Sequence> mergeName(const Sequence& seq, std::size_t index, const std::string& name,
                                  const std::string& into);

/// The parts run one after another in one process, as one sequence (a persistent child's
/// history, --persistent): each part's names made its own, and what a part leaves alive
/// released at its end by explicit operations, in the order the runner releases leftovers
/// (renderers, then bare buffers, then bare contexts, each in creation order); the last part's
/// leftovers are left to the end, as in the part itself. Names renumbered; no directives.
Sequence concatenate(const std::vector<Sequence>& parts);

/// `op` inserted at `position` (0..size); nullopt when the result breaks a precondition.
std::optional<Sequence> insertOperation(const Sequence& seq, std::size_t position,
                                        const Operation& op);

}  // namespace gpufuzz
