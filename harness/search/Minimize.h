// Minimize.h: from a failing sequence to a finding: shrink it, renumber its names, give it the
// directives that make `gpufuzz replay FILE` reproduce it with no options, and measure how often
// it reproduces.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "harness/search/Finding.h"
#include "harness/search/Shrinker.h"

namespace gpufuzz {

struct MinimizeRequest {
  Sequence failing;
  TrialResult first;             // the run that failed
  std::optional<uint64_t> seed;  // the sequence seed, for the `seed` directive, when known
  std::string found;             // the `found` directive: how it was found
  uint32_t confirmations = 5;
  /// A crash of the runner's that comes with its frames is kept by its crash state: its shrink
  /// may end at another operation with the same frames (FailureKey::of). A variant's shrink,
  /// for its witness at its own operation, keeps the operation.
  bool anyOp = false;
};

/// Shrinks and annotates. Confirmations are skipped when `alreadyKnown` says the minimal
/// sequence's signature was found before (its hit counter is all that changes then).
Finding minimizeFailure(Shrinker& shrinker, TrialRunner& trials, const MinimizeRequest& request,
                        const std::function<void(const std::string&)>& onStep = {},
                        const std::function<bool(const Finding&)>& alreadyKnown = {});

/// The failing sequence of `request` as its own finding, not shrunk and not confirmed: its
/// directives, evidence and cause as minimizeFailure would give them.
Finding unshrunkFinding(const TrialRunner& trials, const MinimizeRequest& request);

/// The failing sequence of `request` as its own finding, not shrunk, then confirmed as
/// minimizeFailure confirms a minimal one: for a failure whose cause its run settled, met once
/// no shrink may start.
Finding confirmedUnshrunk(Shrinker& shrinker, TrialRunner& trials, const MinimizeRequest& request);

/// How long a shrink's candidate of `first`'s failure may go without progress before it is
/// stopped (Shrinker::limitCandidates): four times the longest that any operation of the failing
/// run took, at least kLeastCandidateLimit. The failing operation itself is taken to have lasted
/// all of the run's time its finished operations do not account for (start-up and release
/// included), which can only overstate it. None for a run with no time measured.
std::optional<Millis> candidateStuckLimit(const TrialResult& first);
/// The same for a recorded finding, from the timings of its confirmation run (none without).
std::optional<Millis> candidateStuckLimit(const Finding& finding);
inline constexpr Millis kLeastCandidateLimit{1'000};
/// The candidate limit's multiple of the longest operation.
inline constexpr int kTimesLongest = 4;

/// The `# expect:` a finding's file carries: its class, and its place unless it is a leak.
Expectation expectationOf(const RunOutcome& outcome);

}  // namespace gpufuzz
