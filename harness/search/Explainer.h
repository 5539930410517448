// Explainer.h: what a failure needs and what prevents it, learned by experiment: every single
// edit of a minimal failing sequence (a removal, another argument value, one inserted wait,
// upload or release, one repeated step) is run once in a child process, and the report says
// which edits keep the failure (the same class at the same kind of operation) and which flip it.
// The steps are annotated from a replay of the sequence through the renderer's lifecycle under
// the policy in force (LifecycleFacts), so the report reads in terms of contexts, queued work and
// releases. ExplanationReport holds the report, and renders it as Markdown and as JSON.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/search/Shrinker.h"
#include "harness/search/Trial.h"
#include "model/Sequence.h"
#include "model/renderer/LifecycleFacts.h"

namespace gpufuzz {

/// How one experiment ended, against the failure being explained.
enum class EditVerdict : uint8_t {
  Keeps,         // the same failure key
  Prevents,      // the run passed
  Changes,       // another failure
  Inconclusive,  // the harness failed (or was stopped)
};
std::string_view verdictName(EditVerdict v);  // "keeps", "prevents", "changes", "inconclusive"

struct Experiment {
  Sequence sequence;
  RunOutcome outcome;
  EditVerdict verdict = EditVerdict::Inconclusive;
};

struct Explanation {
  std::string backend, policy, faults;
  Sequence original;   // as given
  Sequence minimal;    // the sequence the experiments edited
  RunOutcome outcome;  // the minimal sequence's failure
  FailureKey key;
  /// The shrinker's edits when the given sequence was not 1-minimal (and shrinking was allowed).
  std::vector<std::string> shrinkSteps;
  /// Whether no single removal (and no simplification tried) keeps the failure.
  bool oneMinimal = false;
  /// The failing operation's 0-based index, or minimal.ops.size() for a failure at the end.
  std::size_t failingIndex = 0;
  std::vector<StepFacts> facts;  // one per operation of `minimal`

  struct Removal {
    std::size_t index = 0;
    std::vector<std::size_t> alsoRemoved;  // dependents that went with it
    Experiment experiment;
    /// Its removal made the failure disappear (passed, or failed otherwise).
    bool necessary() const {
      return experiment.verdict == EditVerdict::Prevents ||
             experiment.verdict == EditVerdict::Changes;
    }
  };
  /// One per operation up to the failing one (those after it never run).
  std::vector<Removal> removals;

  struct Argument {
    std::size_t index = 0;
    std::string name;
    uint64_t value = 0;
    std::vector<uint64_t> tried;
    std::vector<Experiment> experiments;  // parallel to `tried`
    /// Every value tried keeps the failure.
    bool isFree() const;
  };
  /// Every argument of every operation up to the failing one.
  std::vector<Argument> arguments;

  struct Insertion {
    std::size_t position = 0;  // the index the inserted operation takes
    Operation inserted;
    Experiment experiment;
    std::string describe(const Sequence& minimal) const;  // "insert `sync r0` before 3 (...)"
  };
  /// Every valid single insertion tried (each live renderer's sync, read_back, set_textures and
  /// destroy, each live bare buffer's buf_destroy and context's ctx_destroy, at each position
  /// before the failing operation).
  std::vector<Insertion> insertions;
  std::vector<const Insertion*> preventing() const;

  struct Repetition {
    std::size_t index = 0;
    /// None when a copy right after it is invalid, or would come after the failure.
    std::optional<Operation> copy;
    std::optional<Experiment> experiment;  // none when invalid or at or after the failure
    /// The context of the operation the copy's run failed at, when it kept the failure.
    std::optional<uint32_t> failingContext;
    /// Whether that operation is another step than the original failing one.
    bool failedElsewhere = false;
  };
  std::vector<Repetition> repetitions;

  /// Threads: each operation on another thread than the failing one and free to overlap it,
  /// moved onto the failing operation's thread (so one waits for the other, in file order).
  struct Overlap {
    std::size_t index = 0;
    Experiment experiment;
    /// Without the overlap the failure is gone: it needs this operation beside the failing one.
    bool needed() const {
      return experiment.verdict == EditVerdict::Prevents ||
             experiment.verdict == EditVerdict::Changes;
    }
  };
  std::vector<Overlap> overlaps;
  /// For a threaded sequence: the experiment with every operation on one thread.
  std::optional<Experiment> oneThread;

  /// Counting: how many device contexts the sequence introduces and whether each is needed.
  struct Contexts {
    uint32_t introduced = 0;
    bool allNeeded = false;                  // every context-introducing step is necessary
    std::optional<uint32_t> failingContext;  // the failing operation's context
    /// The failing operation's context in each repetition that added a context and still failed.
    std::vector<uint32_t> failingContextsWithOneMore;
    /// Whether one of those runs failed at another step than the original failing one.
    bool failedElsewhereWithOneMore = false;
  };
  Contexts contexts;

  uint32_t reproduced = 0, confirmations = 0;
  std::size_t experimentsRun = 0;  // distinct single-edit sequences run
  uint64_t executions = 0;         // children started, confirmations included
  uint32_t inconclusive = 0;       // experiments the harness could not run
  double elapsedSeconds = 0;
};

struct ExplainOptions {
  /// Shrink first when some single shrink edit keeps the failure.
  bool shrink = true;
  /// Also the tries a threaded experiment gets, each its own schedule, until one fails alike.
  uint32_t confirmations = 5;
  /// Reproductions already measured (hits, replays): the replays are not run again.
  std::optional<std::pair<uint32_t, uint32_t>> knownReproduction;
  /// How long a shrink candidate or an experiment may go without progress in an operation before
  /// it is stopped, for a failure that finishes (candidateStuckLimit, Shrinker::limitCandidates);
  /// none: their deadlines. Hangs, spins and slow operations keep their deadlines regardless.
  std::optional<Millis> candidateLimit;
  /// Told what the explainer is doing ("shrinking", "running 57 experiments").
  std::function<void(const std::string&)> onProgress;
};

/// Explains `failing`, whose run ended in `failure` (a failure, not a pass: std::invalid_argument
/// otherwise). Experiments run on `trials` (its deadline calibration is shared), at most `jobs`
/// at once; Quick trials, or Confirmed ones when the failure is `slow`.
Explanation explainFailure(TrialRunner& trials, unsigned jobs, const Sequence& failing,
                           const RunOutcome& failure, const ExplainOptions& options = {});

/// Where the explanation of `sequenceFile` goes: beside it when it is a finding's minimal.seq
/// (a finding.json next to it), else `<outDir>/<finding id>/explanation.md`.
std::filesystem::path explanationPath(const std::filesystem::path& sequenceFile,
                                      const std::filesystem::path& outDir, const Explanation& e);

}  // namespace gpufuzz
