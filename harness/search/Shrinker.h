// Shrinker.h: shrinks a failing sequence to a 1-minimal one: no single removal (of an operation
// and whatever then becomes invalid) and no single argument simplification still reproduces the
// same failure class at the same kind of operation; a crash whose frames come with every run
// (the runner's) keeps its frames instead, at whichever operation. A sequence over 32 operations
// first loses ranges of operations, halving; one still over 200 then ends 1-minimal for removals
// only. A candidate that fails differently is another bug and is never accepted. Candidates of a
// step are tried concurrently (up to `jobs`), and the first in candidate order that reproduces is
// taken, so the result does not depend on timing: the candidates after it are cancelled at once
// (RunCancel.h), their children killed.
//
// Threads (docs/sequences.md, Threads): a threaded sequence also loses threads (every operation on
// thread 0, a thread merged into another, an operation moved to thread 0), and a threaded
// candidate gets up to K tries, each with its own schedule, kept at the first that fails the
// same way. K follows the reproduction rate: measured over kRateProbe tries of the failing
// sequence first, then over every reproduction count; K is the tries that see a failure of that
// rate with 95% odds, at most kMostTries. A removal may lower the rate, so the shrink ends with a
// pass of single edits at kMostTries tries each. A failure none of the first kMostTries tries
// meets again is not shrunk: each candidate would run kMostTries times, twice, to no avail.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "harness/search/Trial.h"
#include "model/Sequence.h"
#include "model/SequenceEdits.h"

namespace gpufuzz {

/// What a shrink must keep: the class and the kind of operation it happens at; for a crash of
/// the runner's, whose every run brings its frames, the crash state instead of the operation.
struct FailureKey {
  OutcomeClass cls = OutcomeClass::Pass;
  std::string op;
  /// The fault-plan rule that planted it, or empty: a shrink keeps a planted failure planted by
  /// the same rule, so it never turns into another planted bug that fails alike.
  std::string fault;
  /// A crash's state (crashState), or empty. With it, a candidate that crashes with the same
  /// frames at another operation is the same bug (search/Cause.h), and reproduces it.
  std::vector<std::string> crashState;
  static FailureKey of(const RunOutcome& o) { return FailureKey{o.cls, o.op, o.fault, {}}; }
  /// `first`'s key, by crash state where `first` is a crash with frames that came with the run
  /// (the runner's signal handler), nothing planted it, and `anyOp`: a variant's shrink keeps
  /// its operation. A target's frames come only from a debugger's run, so not from candidates.
  static FailureKey of(const TrialResult& first, bool anyOp);
  bool matches(const RunOutcome& o) const { return o.cls == cls && o.op == op && o.fault == fault; }
  /// By crash state when the key has one, else as above.
  bool matches(const TrialResult& t) const;
  /// The candidate limit its shrink's candidates and its explanation's experiments run under:
  /// `limit`, or none for a hang, a spin or a slow operation, a deadline's failure, whose runs
  /// keep their deadlines.
  std::optional<Millis> candidateLimit(std::optional<Millis> limit) const {
    const bool missesDeadline =
        cls == OutcomeClass::Hang || cls == OutcomeClass::Spin || cls == OutcomeClass::Slow;
    return missesDeadline ? std::nullopt : limit;
  }
  /// The rule whose planted hang or spin this is, or empty: a candidate in which it fires
  /// reproduces the failure as soon as the call stays put (TrialRunner::run's `plantedHang`),
  /// so no candidate waits out the whole deadline of a call that never returns.
  std::string plantedHang() const {
    return cls == OutcomeClass::Hang || cls == OutcomeClass::Spin ? fault : std::string();
  }
  bool operator==(const FailureKey&) const = default;
};

struct ShrinkResult {
  Sequence minimal;    // names renumbered
  RunOutcome outcome;  // the minimal sequence's failure
  uint64_t executions = 0;
  std::vector<std::string> steps;  // the edits taken, in order
  /// Candidates stopped at the candidate limit (limitCandidates) instead of a full deadline.
  uint64_t candidatesCut = 0;
  /// Candidates cancelled: after an earlier one of their round reproduced, or when the shrink
  /// window closed or its turn ended while they ran. Their executions count, their verdicts none.
  uint64_t candidatesCancelled = 0;
  /// The shrink window closed, or its turn was over, before the shrink ended: `minimal` may
  /// not be 1-minimal.
  bool cutShort = false;
  /// A threaded failure that none of Shrinker::kMostTries tries met again: not shrunk, since no
  /// candidate could be told to keep it. `minimal` is the failing sequence as it was.
  bool unreproduced = false;
};

class Shrinker {
 public:
  Shrinker(TrialRunner& trials, unsigned jobs) : trials_(trials), jobs_(jobs == 0 ? 1 : jobs) {}

  /// When shrinking a failure that a run reaches by finishing its operations (a crash, an
  /// error, a mismatch, a leak, an invalid call), a candidate stuck in an operation for `limit`
  /// cannot be that failure: it is stopped then instead of at the deadline. Hangs, spins and slow
  /// operations are shrunk under their deadlines whatever this says.
  void limitCandidates(std::optional<Millis> limit) { candidateLimit_ = limit; }
  /// The try the failure was seen in: a threaded candidate's tries are that one and those after
  /// it, so a candidate first meets the schedule that failed (a schedule is drawn from the try
  /// and the `# seed:`, not the operations: ThreadLanes.h).
  void setBaseAttempt(uint64_t attempt) { baseAttempt_ = attempt; }
  /// The shrink's turn is over once `over` says so: it ends then with its best so far, as at the
  /// shrink window's close, and other failures get their turn. `over` is asked between rounds,
  /// and every 50 ms during one from another thread, which then cancels the round; once true it
  /// must stay true.
  void endTurnWhen(std::function<bool()> over) { turnOver_ = std::move(over); }
  /// Tries a threaded candidate gets now: from the rate measured so far (kRateProbe tries of the
  /// failing sequence come first), at most kMostTries.
  uint32_t triesPerCandidate() const;
  /// Tries of a threaded failing sequence that measure its rate before its shrink.
  static constexpr uint32_t kRateProbe = 16;
  static constexpr uint32_t kMostTries = 64;

  /// `onStep` is told each accepted edit (for status displays).
  ShrinkResult shrink(const Sequence& failing, const RunOutcome& failure,
                      const std::function<void(const std::string&)>& onStep = {}) {
    return shrink(failing, failure, FailureKey::of(failure), onStep);
  }
  /// Keeping `key`, which `failure` meets. The shrink ends early, its best so far, once the
  /// trials' shrink window closes (TrialRunner::shrinkUntil) or its turn is over (endTurnWhen):
  /// ShrinkResult::cutShort.
  ShrinkResult shrink(const Sequence& failing, const RunOutcome& failure, const FailureKey& key,
                      const std::function<void(const std::string&)>& onStep = {});

  struct Reproductions {
    uint32_t hits = 0;
    /// Tries that said nothing of the system under test: a harness error, such as a child
    /// killed from outside.
    uint32_t unjudged = 0;
    uint64_t executions = 0;
    /// A reproducing run's evidence (with the stacks of a stuck child), if any reproduced.
    std::optional<Supervised> evidence;
  };
  /// Runs `seq` `times` times, confirming deadline misses, and counts how often it fails as `key`.
  /// A threaded sequence's tries are firstTry..firstTry+times-1; from 0, the schedules a replay
  /// of its file meets first. Try 0 takes the evidence; for a hang or a spin, so does every try
  /// begun while no reproducing try has its stacks.
  Reproductions reproductions(const Sequence& seq, const FailureKey& key, uint32_t times,
                              uint32_t firstTry = 0);

 private:
  /// Runs `batch`'s candidates not tried before (concurrently), a threaded one up to `tries`
  /// times, and takes the first in order that fails as `key`: whether one did.
  bool accept(ShrinkResult& result, const FailureKey& key,
              std::vector<std::pair<Edit, Sequence>>& batch, std::map<uint64_t, bool>& tried,
              const std::function<void(const std::string&)>& onStep, uint32_t tries);

  /// The shrink window closed (TrialRunner::shrinkClosed) or the turn is over (endTurnWhen).
  bool closed() const { return trials_.shrinkClosed() || (turnOver_ && turnOver_()); }

  /// A threaded sequence failed `hits` of `tries` times: what triesPerCandidate() follows.
  void observeRate(uint32_t hits, uint32_t tries);

  TrialRunner& trials_;
  unsigned jobs_;
  std::optional<Millis> candidateLimit_;
  uint64_t baseAttempt_ = 0;
  std::function<bool()> turnOver_;
  /// The failure being shrunk has threads: its candidates get several tries
  /// (TrialRunner::triesFor).
  bool threadedFailure_ = false;
  mutable std::mutex rateMutex_;
  uint64_t rateHits_ = 0, rateTries_ = 0;
};

/// The tries that see a failure of rate hits/tries at least once with 95% odds, at most
/// Shrinker::kMostTries (no hit counts as one hit in one more try).
uint32_t triesForRate(uint64_t hits, uint64_t tries);

/// Runs `count` tasks with at most `jobs` at once; task i's result lands in slot i.
template <typename T>
std::vector<T> runConcurrently(std::size_t count, unsigned jobs,
                               const std::function<T(std::size_t)>& task);

}  // namespace gpufuzz

#include "harness/search/Shrinker.hpp"
