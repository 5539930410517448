// ModelState.h: the state a lifecycle model gives a sequence as it runs: which names were
// introduced, of which kind, owned by which name, alive or ended, and each name's flags.
// It answers every operation's preconditions (docs/models.md, "Sequences of a model"), any model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/Operation.h"

namespace gpufuzz {

class ModelState {
 public:
  explicit ModelState(const LifecycleModel& model);

  /// Why an operation may not run now: a reason, and which of its names it concerns.
  struct Verdict {
    std::string reason;  // empty when the operation may run
    int nameIndex = -1;  // index into Operation::names, or -1 (the form, an argument)
    bool ok() const { return reason.empty(); }
  };

  /// One name introduced so far.
  struct Name {
    std::string name;
    std::size_t kind = 0;
    bool alive = true;
    std::optional<std::size_t> owner;  // index into names(): the owner it was introduced under
    uint64_t flags = 0;                // bit i: the kind's flag i (ResourceDecl::flags)
    std::size_t introducedAt = 0;      // 0-based ordinal of the introducing operation
    std::optional<std::size_t> endedAt;
  };

  /// Checks the operation's form (its name in the model, name count and syntax, argument
  /// bounds) and its names against the state: used names alive and of their slot's kind,
  /// introduced names never seen, no name twice in one operation.
  Verdict check(const Operation& op) const;
  /// Applies `op`. Throws std::invalid_argument, changing nothing, when check() fails.
  void apply(const Operation& op);
  /// Applies an operation known to be valid (the generator's own).
  void applyValid(const Operation& op);

  const LifecycleModel& model() const { return *model_; }
  /// Every name introduced so far, in order of introduction.
  const std::vector<Name>& names() const { return names_; }
  const Name* find(std::string_view name) const;
  /// The live names of `kind`, as indices into names(), in creation order.
  const std::vector<std::size_t>& alive(std::size_t kind) const { return alive_[kind]; }
  /// Live names of `kind` whose owner is `owner` (an index into names()).
  std::size_t aliveOwnedBy(std::size_t owner) const;
  bool flag(std::size_t nameIndex, std::size_t flagIndex) const {
    return (names_[nameIndex].flags >> flagIndex) & 1U;
  }
  /// Operations applied so far.
  std::size_t applied() const { return applied_; }

 private:
  const OpDecl& declOf(const Operation& op) const;

  const LifecycleModel* model_;
  std::vector<Name> names_;
  /// Heterogeneous lookup: a name is found without copying it into a std::string.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::size_t, NameHash, std::equal_to<>> index_;
  std::vector<std::vector<std::size_t>> alive_;
  std::size_t applied_ = 0;
};

/// The index into an operation's names of the name that fills single-name slot `slot`.
std::size_t nameIndexOfSlot(const OpDecl& op, std::size_t slot, std::size_t names);

}  // namespace gpufuzz
