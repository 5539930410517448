// Minimize.cpp: shrink, annotate, confirm.
#include "harness/search/Minimize.h"

#include <algorithm>
#include <chrono>

#include "harness/base/RunConfig.h"
#include "harness/search/Cause.h"
#include "model/Schedule.h"
#include "renderer/Backends.h"

namespace gpufuzz {

Expectation expectationOf(const RunOutcome& outcome) {
  Expectation e;
  e.cls = outcome.cls;
  if (outcome.cls != OutcomeClass::Leak && outcome.cls != OutcomeClass::Pass) e.at = outcome.at;
  return e;
}

namespace {

/// kTimesLongest x the longest operation, at least kLeastCandidateLimit.
Millis limitOfLongest(std::chrono::microseconds longest) {
  return std::max(kLeastCandidateLimit, std::chrono::ceil<Millis>(longest * kTimesLongest));
}

}  // namespace

std::optional<Millis> candidateStuckLimit(const TrialResult& first) {
  using std::chrono::microseconds;
  const Supervised& run = first.evidence;
  if (run.wall <= microseconds::zero()) return std::nullopt;
  microseconds longest{}, finished{};
  for (const OpTiming& t : run.timings) {
    longest = std::max(longest, t.elapsed);
    finished += t.elapsed;
  }
  return limitOfLongest(std::max(longest, run.wall - std::min(run.wall, finished)));
}

std::optional<Millis> candidateStuckLimit(const Finding& finding) {
  if (finding.timings.empty()) return std::nullopt;
  std::chrono::microseconds longest{};
  for (const OpTiming& t : finding.timings)
    longest = std::max(longest, t.elapsed);
  return limitOfLongest(longest);
}

namespace {

/// `minimal`, failing with `outcome`, as a finding of `request`: with the directives that make
/// `gpufuzz replay FILE` run it as it ran, the original sequence, and the first run's evidence.
Finding annotated(const TrialRunner& trials, const MinimizeRequest& request, Sequence minimal,
                  const RunOutcome& outcome) {
  Finding f;
  f.outcome = outcome;
  f.minimal = std::move(minimal);
  Directives& d = f.minimal.directives;
  d = Directives{};
  if (trials.setup().target.empty()) {
    d.backend = trials.setup().backend;
  } else {
    d.target = trials.setup().target.text();
    f.targetVersion = trials.setup().target.version;
  }
  d.policy = std::string(policyName(trials.setup().policy));
  d.faults = trials.setup().faults;
  d.expect = expectationOf(f.outcome);
  d.seed = request.seed;
  if (!request.found.empty()) d.found = request.found;
  // A threaded failure on a runtime is kept with the schedule and try it failed under, which
  // replay, shrink and explain start from (docs/sequences.md, Threads on real runtimes).
  const BackendProfile* profile = findBackendProfile(trials.setup().backend);
  if (f.minimal.threadCount() > 1 && profile != nullptr && !profile->deterministic) {
    const ScheduleMode mode = scheduleFor(trials.setup().schedule, request.failing.directives);
    d.schedule = std::string(scheduleName(scheduleOfTry(mode, d.seed, request.first.attempt)));
    d.attempt = request.first.attempt;
  }
  f.original = printSequence(request.failing);
  f.seed = request.seed.value_or(0);
  f.stacks = request.first.evidence.stacks;
  f.outputTail = request.first.evidence.outputTail;
  return f;
}

/// Replays `f`'s minimal sequence request.confirmations times, its rate and evidence into `f`;
/// marked stopped when the trials stop meanwhile, or when no try could be judged. A job's stop
/// may reach the children before the campaign: their killed runs are not misses.
void confirm(Finding& f, Shrinker& shrinker, const TrialRunner& trials,
             const MinimizeRequest& request, const FailureKey& key) {
  const auto r = shrinker.reproductions(f.minimal, key, request.confirmations);
  if (trials.stopRequested() || (r.unjudged > 0 && r.unjudged == request.confirmations)) {
    f.stopped = true;
    f.executionsToShrink += r.executions;
    return;
  }
  f.confirmations = request.confirmations;
  f.reproduced = r.hits;
  f.executionsToShrink += r.executions;
  if (r.evidence) {
    // The minimal sequence's own evidence is the clearer one.
    if (!r.evidence->stacks.empty()) f.stacks = r.evidence->stacks;
    f.outputTail = r.evidence->outputTail;
    f.timings = r.evidence->timings;
    f.stuckOp = r.evidence->stuckOp;
  }
}

Finding shrunkAndConfirmed(Shrinker& shrinker, TrialRunner& trials, const MinimizeRequest& request,
                           const std::function<void(const std::string&)>& onStep,
                           const std::function<bool(const Finding&)>& alreadyKnown) {
  shrinker.limitCandidates(candidateStuckLimit(request.first));
  shrinker.setBaseAttempt(request.first.attempt);
  const FailureKey key = FailureKey::of(request.first, request.anyOp);
  ShrinkResult shrunk = shrinker.shrink(request.failing, request.first.outcome, key, onStep);
  Finding f = annotated(trials, request, shrunk.minimal, shrunk.outcome);
  f.executionsToShrink = shrunk.executions;
  f.shrinkCutShort = shrunk.cutShort;
  f.shrinkCandidatesCancelled = shrunk.candidatesCancelled;
  f.shrinkSteps = shrunk.steps;
  const auto stopped = [&] { return trials.stopRequested(); };
  // A shrink cut short keeps its best sequence; confirmations that would not run count nothing.
  f.stopped = stopped();
  if (shrunk.unreproduced && !f.stopped) {
    // Its tries were its confirmations: reproduced 0 of them, a timing accident.
    f.confirmations = Shrinker::kMostTries;
    f.minimal.directives.notes.push_back("not shrunk: no try of " +
                                         std::to_string(Shrinker::kMostTries) + " failed again");
    return f;
  }
  if (f.stopped || (alreadyKnown && alreadyKnown(f))) return f;
  // The shrink kept `key`, so the minimal sequence meets it too.
  confirm(f, shrinker, trials, request, key);
  return f;
}

}  // namespace

Finding unshrunkFinding(const TrialRunner& trials, const MinimizeRequest& request) {
  Finding f = annotated(trials, request, request.failing, request.first.outcome);
  f.timings = request.first.evidence.timings;  // the timeline of the run that failed
  f.stuckOp = request.first.evidence.stuckOp;
  f.cause = failureCause(f.outcome, f.minimal, trials.setup().policy, f.stacks);
  return f;
}

Finding confirmedUnshrunk(Shrinker& shrinker, TrialRunner& trials, const MinimizeRequest& request) {
  shrinker.setBaseAttempt(request.first.attempt);
  Finding f = unshrunkFinding(trials, request);
  confirm(f, shrinker, trials, request, FailureKey::of(request.first, request.anyOp));
  f.cause = failureCause(f.outcome, f.minimal, trials.setup().policy, f.stacks);
  return f;
}

Finding minimizeFailure(Shrinker& shrinker, TrialRunner& trials, const MinimizeRequest& request,
                        const std::function<void(const std::string&)>& onStep,
                        const std::function<bool(const Finding&)>& alreadyKnown) {
  Finding f = shrunkAndConfirmed(shrinker, trials, request, onStep, alreadyKnown);
  f.cause = failureCause(f.outcome, f.minimal, trials.setup().policy, f.stacks);
  return f;
}

}  // namespace gpufuzz
