// LifecycleModel.h: a lifecycle model (docs/models.md) as data: the kinds of resource a program
// makes, the operations on them, their arguments, flags, owners and release order.
//
// Contract:
// - parseModel() checks every rule of docs/models.md and throws InputError
//   "FILE:LINE:COLUMN: message" at the first broken one; a returned model is valid.
//   Warnings (a kind with no default release) are kept in `warnings`, never thrown.
// - Models are immutable once made. internModel() keeps each model for the life of the process,
//   so an Operation may point into its model's declarations (OpDecl) without owning them.
// - The built-in models are files of model/models/, compiled in; builtinModel("renderer") is one.
// - Nothing here switches on an operation's name: the model is data for every part above it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/Failure.h"

namespace gpufuzz {

/// `resource KIND [prefix P] [owner KIND2]`.
struct ResourceDecl {
  std::string kind;
  std::string prefix;
  std::optional<std::size_t> owner;  // index into LifecycleModel::resources
  /// The flags any operation sets or clears on this kind, in order of first mention.
  std::vector<std::string> flags;
  int line = 0;
};

/// The most names a `KIND*` slot takes.
inline constexpr std::size_t kMaxListNames = 4;

/// How an operation's slot treats its name(s).
enum class SlotUse : uint8_t {
  Use,        // KIND: a live name
  End,        // KIND!: a live name, dead afterwards
  List,       // KIND*: zero to four live names
  Introduce,  // -> KIND: a new name
};

struct SlotDecl {
  std::size_t kind;  // index into LifecycleModel::resources
  SlotUse use;
};

/// `key=DEFAULT (MIN..MAX)` or `key=DEFAULT {a|b|c}`. An argument's value is an unsigned integer;
/// for a word argument it is the word's index in `words`.
struct ArgDecl {
  std::string key;
  uint64_t min = 0, max = 0, defaultValue = 0;
  std::vector<std::string> words;  // empty for an integer argument
  bool isWord() const { return !words.empty(); }
  /// "64", or the word "fast".
  std::string valueText(uint64_t v) const;
  /// "1..4096" or "fast|slow".
  std::string rangeText() const;
};

/// `+FLAG(KIND)` / `-FLAG(KIND)`: sets or clears FLAG of the operation's first name of KIND.
struct EffectDecl {
  bool set = true;
  std::size_t kind = 0;  // index into LifecycleModel::resources
  std::size_t flag = 0;  // index into ResourceDecl::flags
  std::size_t slot = 0;  // index into OpDecl::slots: the first single-name slot of `kind`
};

/// `op NAME SLOT... [-> KIND...] [ARG...] [weight:N] [EFFECT...]`. Slots are kept in written
/// order: used slots, then the list slot if any, then introduced slots.
struct OpDecl {
  std::string name;
  std::vector<SlotDecl> slots;
  std::vector<ArgDecl> args;
  uint32_t weight = 1;
  /// The failures one of its runtime calls may return (`fails:`): only these may be marked on it.
  FailWords fails;
  std::vector<EffectDecl> effects;
  std::size_t index = 0;  // in LifecycleModel::ops
  int line = 0;
  /// The model this operation is of; set once the model is interned (internModel).
  const struct LifecycleModel* model = nullptr;

  const ArgDecl* arg(std::string_view key) const;
  std::optional<std::size_t> argIndex(std::string_view key) const;
  /// The list slot's index, if the operation has one.
  std::optional<std::size_t> listSlot() const;
  /// How many names an operation with `listed` names in its list slot has.
  std::size_t nameCount(std::size_t listed) const;
  /// The most names the operation takes: its list slot full.
  std::size_t mostNames() const { return nameCount(listSlot() ? kMaxListNames : 0); }
  /// The slot that the operation's `i`th written name fills, given its name count.
  std::size_t slotOfName(std::size_t i, std::size_t names) const;
};

struct LifecycleModel {
  std::string name;
  std::string note;
  std::vector<ResourceDecl> resources;
  std::vector<OpDecl> ops;
  std::vector<std::size_t> release;  // kinds, in release order
  /// The file's text, as read: `model show` prints it, the hash is taken of it.
  std::string text;
  /// 16 hex digits of a 64-bit FNV-1a hash of `text`: two texts never share a signature.
  std::string hash;
  /// The built-in name, or the path the model was read from.
  std::string source;
  bool builtin = false;
  std::vector<std::string> warnings;

  const OpDecl* op(std::string_view opName) const;
  std::optional<std::size_t> kind(std::string_view kindName) const;
  /// The operation that releases a leftover of `kind` by default: the kind's only ending
  /// operation, when that operation has no other slot. Null when there is none.
  const OpDecl* defaultRelease(std::size_t kind) const;
  /// "alloc P S B [bytes=1..2147483648]": the form of an operation, for messages.
  std::string usage(const OpDecl& op) const;
  /// What `model check` prints: the model's vocabulary, one operation a line.
  std::string describe() const;
};

/// Parses and checks a model's text. `file` names it in error messages. `builtin` allows a
/// reserved name (the project's own files).
LifecycleModel parseModel(std::string_view text, const std::string& file, bool builtin = false);

/// The model kept for the life of the process (one per distinct text and source).
const LifecycleModel& internModel(LifecycleModel model);

/// The names of the built-in models, in the order `model show` lists them.
std::vector<std::string> builtinModelNames();
bool isBuiltinModelName(std::string_view name);
/// A built-in model; throws InputError naming the built-ins for an unknown name.
const LifecycleModel& builtinModel(std::string_view name);
/// Reads, parses and interns a model file; a missing or unreadable file is an InputError.
const LifecycleModel& loadModelFile(const std::string& path);
/// What a `--model` value or a `# model:` directive names: a path when it contains '/' or ends
/// in ".model" (relative to `baseDir` unless absolute), else a built-in name.
const LifecycleModel& resolveModel(std::string_view value, const std::string& baseDir = "");
/// Whether `value` names a model file rather than a built-in model.
bool isModelPath(std::string_view value);

/// "[a-z][a-z0-9_]*": the syntax of kinds, operations, keys, flags (and sequence names).
bool isIdentifier(std::string_view text);

}  // namespace gpufuzz
