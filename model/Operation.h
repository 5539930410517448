// Operation.h: one lifecycle operation of a sequence (docs/sequences.md), in the vocabulary of a
// lifecycle model (docs/models.md): the operation's declaration, its names and its arguments.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/LifecycleModel.h"

namespace gpufuzz {

/// Why `name` is not a valid name (`[a-z][a-z0-9_]*`, at most 32 characters), or empty.
std::string nameError(std::string_view name);
inline constexpr size_t kMaxNameLength = 32;

struct Operation {
  /// The operation's declaration in its model. Models live as long as the process
  /// (internModel), so this never dangles.
  const OpDecl* form = nullptr;
  /// In written order: used slots, the list slot's names, introduced names.
  std::vector<std::string> names;
  /// One value per argument of `form`, in declaration order; a word argument holds its index.
  std::vector<uint64_t> args;
  /// 1-based line in the file it was read from; 0 when generated.
  int line = 0;
  /// The thread it runs on: the T of `@T` (docs/sequences.md, Threads); 0 without a prefix.
  unsigned thread = 0;
  /// The trailing `!WORD[@N]` (docs/failures.md): one of its runtime calls is to fail.
  std::optional<Mark> mark;

  /// The operation's name in its model ("draw").
  std::string_view name() const { return form->name; }
  /// The value of argument `key`; std::out_of_range when the operation has no such argument.
  uint64_t arg(std::string_view key) const;
  /// The kind (index into the model's resources) of the `i`th name.
  std::size_t kindOfName(std::size_t i) const;
  SlotUse useOfName(std::size_t i) const;

  /// Equal operations have the same thread, name, names, arguments and mark (line ignored).
  bool operator==(const Operation& o) const {
    return thread == o.thread && form->name == o.form->name && names == o.names && args == o.args &&
           mark == o.mark;
  }
};

/// The names `op` introduces, in written order.
std::vector<std::string> introducedNames(const Operation& op);
/// Whether `op` ends one of its names.
bool endsAName(const Operation& op);

/// The names that failed operations never made (docs/failures.md): an operation that uses one is
/// skipped, and the names it would have introduced are never made in turn. Not thread-safe.
class UnmadeNames {
 public:
  /// `op` failed as its mark asked: the names it introduces were never made.
  void failed(const Operation& op);
  /// Whether `op` uses a name never made; then it is skipped, and its own names are never made.
  bool skips(const Operation& op);
  /// Whether `name` was never made.
  bool unmade(const std::string& name) const { return unmade_.contains(name); }

 private:
  std::set<std::string> unmade_;
};

/// An operation of `model` with its arguments at their defaults but those given.
/// std::invalid_argument for an operation, key or value the model does not declare.
Operation makeOperation(const LifecycleModel& model, std::string_view opName,
                        std::vector<std::string> names,
                        std::initializer_list<std::pair<std::string_view, uint64_t>> args = {});

/// How many threads a sequence may have: `@0` .. `@7`.
inline constexpr unsigned kMaxThreads = 8;

/// "draw r0 triangles=9 seed=3", "@1 destroy r0": arguments at their default are left out, and
/// the prefix of thread 0.
std::string operationText(const Operation& op);

}  // namespace gpufuzz
