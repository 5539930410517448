// Shrinker.cpp: greedy search over single removals and simplifications to a 1-minimal sequence.
#include "harness/search/Shrinker.h"

#include <map>

#include "model/SequenceEdits.h"

namespace gpufuzz {

namespace {
bool needsConfirmation(OutcomeClass cls) {
  return cls == OutcomeClass::Slow;
}
}  // namespace

ShrinkResult Shrinker::shrink(const Sequence& failing, const RunOutcome& failure,
                              const std::function<void(const std::string&)>& onStep) {
  const FailureKey key = FailureKey::of(failure);
  ShrinkResult result;
  result.minimal = failing;
  result.outcome = failure;
  std::map<std::string, bool> tried;  // normalized operations -> reproduced

  bool progressed = true;
  while (progressed) {
    progressed = false;
    auto candidates = shrinkCandidates(result.minimal);
    // Batches of `jobs` candidates; the first reproducing one in candidate order wins.
    for (std::size_t start = 0; start < candidates.size() && !progressed; start += jobs_) {
      const std::size_t count = std::min<std::size_t>(jobs_, candidates.size() - start);
      const auto outcomes = runConcurrently<std::optional<TrialResult>>(
          count, jobs_, [&](std::size_t i) -> std::optional<TrialResult> {
            const Sequence& candidate = candidates[start + i].second;
            if (tried.count(normalizedOperations(candidate)) > 0) return std::nullopt;
            return trials_.run(
                candidate, needsConfirmation(key.cls) ? TrialMode::Confirmed : TrialMode::Quick);
          });
      for (std::size_t i = 0; i < count; ++i) {
        const auto& [edit, candidate] = candidates[start + i];
        if (!outcomes[i]) continue;
        result.executions += outcomes[i]->executions;
        const bool reproduced = !outcomes[i]->harnessError && key.matches(outcomes[i]->outcome);
        tried[normalizedOperations(candidate)] = reproduced;
        if (!reproduced || progressed) continue;
        const std::string step = edit.describe(result.minimal);
        result.minimal = candidate;
        result.outcome = outcomes[i]->outcome;
        result.steps.push_back(step);
        if (onStep) onStep(step);
        progressed = true;
      }
    }
  }
  Sequence renamed = renumbered(result.minimal);
  renamed.directives = failing.directives;
  result.minimal = std::move(renamed);
  return result;
}

Shrinker::Reproductions Shrinker::reproductions(const Sequence& seq, const FailureKey& key,
                                                uint32_t times) {
  // The first run keeps the evidence (stacks of a stuck child); the others only count.
  const auto outcomes = runConcurrently<TrialResult>(times, jobs_, [&](std::size_t i) {
    return trials_.run(seq, i == 0 ? TrialMode::Evidence : TrialMode::Confirmed);
  });
  Reproductions r;
  for (const TrialResult& t : outcomes) {
    r.executions += t.executions;
    if (t.harnessError || !key.matches(t.outcome)) continue;
    ++r.hits;
    if (!r.evidence || (r.evidence->stacks.empty() && !t.evidence.stacks.empty())) {
      r.evidence = t.evidence;
    }
  }
  return r;
}

}  // namespace gpufuzz
