// Sequence.h: a sequence of lifecycle operations and its `.seq` text format (docs/sequences.md):
// parse with every bound and precondition checked, print, normalize.
//
// Parsing rejects, with "FILE:LINE:COLUMN: message" (InputError): unknown operations, keys and
// directives; malformed or out-of-bounds values; bad or reused names; operations on names that
// are not alive or of the wrong kind (the model's preconditions); duplicate directives; an
// expectation `at N` beyond the last operation; a bad `@T` prefix or a `# threads:` that
// disagrees with the `@T` lines. A parsed Sequence is valid.
//
// A sequence is of a lifecycle model (docs/models.md): `--model` (the `model` argument of the
// parsers), else its `# model:` directive (a path is relative to the file), else `all`.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/LifecycleModel.h"
#include "model/Operation.h"
#include "model/Outcome.h"

namespace gpufuzz {

/// The backends a sequence can name (docs/sequences.md), in the contract's order. `auto` is not
/// one: it is resolved to one of these before anything runs.
inline constexpr std::array<std::string_view, 5> kBackendNames = {"sim", "cuda", "cuda-async",
                                                                  "opencl", "vulkan"};

/// The `# key: value` lines before the first operation. Command-line options override them.
struct Directives {
  std::optional<std::string> backend;  // one of kBackendNames, or auto
  /// The program a finding was made with (`--target`'s words, shell-quoted): docs/target.md.
  std::optional<std::string> target;
  std::optional<std::string> policy;  // a teardown policy name
  std::optional<std::string> faults;  // a built-in plan name or a path
  /// The lifecycle model, as written: a built-in name or a path relative to the file.
  std::optional<std::string> model;
  std::optional<Expectation> expect;
  /// `expect.BACKEND`, by backend name (one of kBackendNames).
  std::map<std::string, Expectation> expectOn;
  std::optional<uint64_t> seed;
  /// `# threads: N`: set only while a file is read (and checked against its `@T` lines) or
  /// printed (from Sequence::threadCount()); a parsed Sequence holds none.
  std::optional<uint64_t> threads;
  std::optional<std::string> found;
  /// `# device-memory: BYTES`: about BYTES of device memory left to the run (docs/failures.md).
  std::optional<uint64_t> deviceMemory;
  /// `# schedule:` and `# try:`: the schedule and try a threaded finding failed under
  /// (docs/sequences.md, Threads on real runtimes); replay, shrink and explain start there.
  std::optional<std::string> schedule;
  std::optional<uint64_t> attempt;
  std::vector<std::string> notes;
  bool operator==(const Directives&) const = default;
};

struct Sequence {
  Directives directives;
  std::vector<Operation> ops;
  /// The lifecycle model the operations are of; null stands for the built-in `all`.
  const LifecycleModel* model = nullptr;
  /// Where each directive's value was read (key to 1-based line and column), for errors about a
  /// value found wrong later (a `faults` directive naming a plan that does not parse). Empty for
  /// sequences that were not parsed from text.
  std::map<std::string, std::pair<int, int>> directivePlaces = {};

  /// What this sequence expects on `backend` (one of kBackendNames): expect.<backend>, else expect,
  /// else pass.
  Expectation expectationFor(std::string_view backend) const;
  /// The sequence's model: `model`, or the built-in `all`.
  const LifecycleModel& lifecycle() const;
  /// 1 + the largest thread of its operations (1 without `@T` lines).
  unsigned threadCount() const;
};

/// The built-in model `all`, which a file without `# model:` is read in.
const LifecycleModel& defaultModel();

/// Parses and validates. `file` names the input in error messages, and its folder is where a
/// relative `# model:` path starts. A non-null `model` overrides the file's directive.
Sequence parseSequence(std::string_view text, const std::string& file,
                       const LifecycleModel* model = nullptr);
/// Reads and parses a file; a missing or unreadable file is an InputError too.
Sequence loadSequence(const std::string& path, const LifecycleModel* model = nullptr);
/// Reads a file in `model`: a file whose `# model:` names another model is an InputError at that
/// directive (a queue's entries, --seeds).
Sequence loadSequenceOf(const std::string& path, const LifecycleModel& model);

/// Checks the model's preconditions (names alive, of the right kind, never reused). Throws
/// InputError naming the operation's line (or its 1-based ordinal when it has no line).
void validateSequence(const Sequence& seq, const std::string& file);

/// The file text: a "# gpufuzz sequence" header, the directives that are set, the operations.
std::string printSequence(const Sequence& seq);
/// The operations alone, one a line, with names renumbered in order of appearance (each kind's
/// prefix: r0 r1 ..., c0 ..., b0 ...): the text a failure's signature uses.
std::string normalizedOperations(const Sequence& seq);
/// The same sequence with names renumbered in order of appearance, and threads too (the first
/// thread to appear is 0).
Sequence renumbered(const Sequence& seq);
/// The same sequence with every operation on thread 0.
Sequence onOneThread(Sequence seq);

/// What each operation waits for before it begins (docs/sequences.md, Threads): the previous
/// operation of its thread and, for each of its names, the file's previous operation on that
/// name; 0-based indexes, each earlier than the operation, in increasing order.
std::vector<std::vector<std::size_t>> threadWaits(const Sequence& seq);

}  // namespace gpufuzz
