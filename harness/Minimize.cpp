// Minimize.cpp: shrink, annotate, confirm.
#include "harness/Minimize.h"

namespace gpufuzz {

Expectation expectationOf(const RunOutcome& outcome) {
  Expectation e;
  e.cls = outcome.cls;
  if (outcome.cls != OutcomeClass::Leak && outcome.cls != OutcomeClass::Pass) e.at = outcome.at;
  return e;
}

Finding minimizeFailure(Shrinker& shrinker, TrialRunner& trials, const MinimizeRequest& request,
                        const std::function<void(const std::string&)>& onStep) {
  ShrinkResult shrunk = shrinker.shrink(request.failing, request.first.outcome, onStep);
  Finding f;
  f.outcome = shrunk.outcome;
  f.minimal = shrunk.minimal;
  Directives& d = f.minimal.directives;
  d = Directives{};
  d.backend = trials.setup().backend;
  d.policy = std::string(policyName(trials.setup().policy));
  d.faults = trials.setup().faults;
  d.expect = expectationOf(f.outcome);
  d.seed = request.seed;
  if (!request.found.empty()) d.found = request.found;
  f.original = printSequence(request.failing);
  f.seed = request.seed;
  f.executionsToShrink = shrunk.executions;
  f.shrinkSteps = shrunk.steps;
  f.confirmations = request.confirmations;
  f.reproduced = shrinker.reproductions(f.minimal, FailureKey{f.outcome.cls, f.outcome.op},
                                        request.confirmations, &f.executionsToShrink);
  // The evidence of the original failure: stacks of the stuck child and its output.
  f.stacks = request.first.evidence.stacks;
  f.outputTail = request.first.evidence.outputTail;
  return f;
}

}  // namespace gpufuzz
