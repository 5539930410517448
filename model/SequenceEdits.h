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
  enum class Kind : uint8_t { Remove, Simplify, Insert };
  Kind kind = Kind::Remove;
  /// Remove: the 0-based index of the operation removed; Simplify: of the operation changed;
  /// Insert: the position the new operation takes.
  std::size_t index = 0;
  /// Simplify: the argument ("triangles") and its new value; Insert: the inserted operation.
  std::string argument;
  uint64_t value = 0;
  Operation inserted;
  /// For people: "remove 3 (destroy r0)", "triangles=1 at 2", "insert sync r0 before 3".
  std::string describe(const Sequence& before) const;
};

/// Whether the operations satisfy the model's preconditions.
bool isValid(const Sequence& seq);

/// The sequence without operation `index` and whatever then becomes invalid (removing a
/// `create r0` removes every operation on r0; removing a `ctx_create c0` removes its buffers'
/// operations too). Directives are kept.
Sequence removeOperation(const Sequence& seq, std::size_t index);

/// The operations `index` depends on or that depend on it, beside itself: what removal takes out.
std::vector<std::size_t> removalSet(const Sequence& seq, std::size_t index);

/// The arguments of an operation, with their current values: ("triangles", 9), ("seed", 3).
std::vector<std::pair<std::string, uint64_t>> argumentsOf(const Operation& op);
/// Sets a named argument; false when `op` has no such argument.
bool setArgument(Operation& op, const std::string& argument, uint64_t value);
/// Simpler values to try for an argument, simplest first (its minimum, its default, halfway).
std::vector<uint64_t> simplerValues(const Operation& op, const std::string& argument);
/// A few other values for an argument, to learn whether it matters (explain).
std::vector<uint64_t> probeValues(const Operation& op, const std::string& argument);

/// Every single removal, largest first, then every single-argument simplification.
std::vector<std::pair<Edit, Sequence>> shrinkCandidates(const Sequence& seq);

/// `op` inserted at `position` (0..size); nullopt when the result breaks a precondition.
std::optional<Sequence> insertOperation(const Sequence& seq, std::size_t position,
                                        const Operation& op);

}  // namespace gpufuzz
