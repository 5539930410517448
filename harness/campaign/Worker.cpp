// Worker.cpp: a worker's loop: take a sequence, run it, hand its failure to the examiner.
#include "harness/campaign/Worker.h"

#include "model/SequenceEdits.h"
#include "model/SplitMix.h"

namespace gpufuzz {

Worker::Worker(const CampaignPlan& plan, TrialRunner& trials, FindingStore& store, Parts parts)
    : plan_(plan), trials_(trials), store_(store), parts_(parts) {}

void Worker::work() {
  if (plan_.persistent > 1) persistent_.emplace(plan_.persistent);
  const auto take = [this] {
    return parts_.stops.mayTake() ? parts_.schedule.take() : std::nullopt;
  };
  for (std::optional<uint64_t> k = take(); k; k = take()) {
    // Until it is done, the sequence is where a resumed campaign goes on: one cut short by a
    // stop counts nothing here and is run again then.
    const uint64_t seqSeed = parts_.schedule.seedOf(*k);
    if (!runOne(*k, parts_.source.draw(*k, seqSeed), seqSeed)) return;
    // Guided search: mutants of kept sequences after the stream's own, more of them as fresh
    // generation stops adding signals. They take no index of the stream, so every sequence
    // blind search would run still runs (SequenceSource.h).
    const uint32_t mutants = parts_.source.mutantsAfter(seqSeed);
    for (uint32_t m = 0; m < mutants && !parts_.stops.requested(); ++m) {
      if (!parts_.stops.budgetLeft()) break;
      const uint64_t mutantSeed = splitmix64(seqSeed + m + 1);
      std::optional<SequenceSource::Drawn> drawn = parts_.source.mutant(mutantSeed);
      if (!drawn) break;
      if (!runOne(kMutant, std::move(*drawn), mutantSeed)) return;
    }
  }
}

/// Runs one sequence, at shard counter `k` or a mutant (kMutant), and handles its failure; false
/// when the worker stops (a stop, a broken harness, a target that cannot run the model).
bool Worker::runOne(uint64_t k, SequenceSource::Drawn drawn, uint64_t seqSeed) {
  // The worker's claims end with its sequence, however it ends.
  const struct EndClaims {
    Triage& triage;
    ~EndClaims() {
      triage.endOwnClaims();
      triage.releaseKindClaims();
    }
  } endClaims{parts_.triage};
  const bool mutant = k == kMutant;
  // Its seed goes with it: a threaded sequence's schedules are drawn from it (ThreadLanes.h).
  drawn.seq.directives.seed = seqSeed;
  const Sequence& seq = drawn.seq;
  // What the run showed goes to guided search's queue before any re-run.
  const auto observed = [&](TrialResult r) {
    parts_.source.observe(drawn, r);
    return r;
  };
  // What failed, as a fresh process runs it: the sequence, or with --persistent perhaps the
  // sequences its process ran before it too.
  Sequence failing = seq;
  std::size_t ranBefore = 0;
  TrialResult t;
  if (!persistent_) {
    t = observed(classified(seq, trials_.run(seq, TrialMode::Quick)));
  } else if (t = observed(trials_.runPersistent(*persistent_, seq, store_.hasCrashEntries()));
             t.outcome.failed() || t.evidence.stuck || t.harnessError) {
    if (parts_.stops.cutShort()) return false;
    bool hit = !t.harnessError && parts_.triage.persistentHit(seq, t);
    if (!hit) {
      ranBefore =
          rerunFresh(failing, t, hit, parts_.triage.stuckUnderCrash(t.outcome, t.evidence.stacks));
    }
    if (hit) {
      parts_.schedule.done(k);
      count(mutant, t.outcome.cls, true);
      return true;
    }
  }
  if (t.outcome.unsupported && !t.harnessError) {
    // Not a finding: the target lacks what the model asks of it. The campaign stops.
    parts_.stops.unsupported((t.outcome.op.empty() ? std::string() : "at " + t.outcome.op + ": ") +
                             t.outcome.detail);
    return false;
  }
  if (t.harnessError) {
    if (parts_.stops.cutShort()) return false;
    parts_.board.say(stderr, "gpufuzz: harness error on sequence seed %llu: %s\n",
                     static_cast<unsigned long long>(seqSeed), t.harnessError->c_str());
    parts_.schedule.done(k);
    RunCounts& counts = parts_.counts;
    if (++counts.harnessErrors >= 10 && counts.harnessErrors * 2 > counts.sequences)
      parts_.stops.harnessBroken();
    return true;
  }
  if (mutant && t.outcome.failed() && drawn.parent)
    parts_.schedule.mutantFailed(seqSeed, *drawn.parent);
  using Handled = Examiner::Handled;
  const Handled handled = t.outcome.failed()
                              ? parts_.examiner.onFailure(failing, seqSeed, t, ranBefore, k)
                              : Handled::Dropped;
  if (handled == Handled::Queued) {
    // The examining worker finishes it, and marks it done then.
    count(mutant, t.outcome.cls, true);
    return true;
  }
  const bool stands = handled == Handled::Stands;
  if (parts_.stops.cutShort()) {
    if (stands && !mutant) ++parts_.counts.failuresCutShort;
    return false;
  }
  parts_.schedule.done(k);
  count(mutant, t.outcome.cls, stands);
  return true;
}

/// A run of the stream counts as a sequence of its class; a mutant as a mutant run.
void Worker::count(bool mutant, OutcomeClass cls, bool stands) {
  RunCounts& counts = parts_.counts;
  if (mutant) {
    ++counts.mutants;
    return;
  }
  ++counts.sequences;
  ++counts.byClass[static_cast<std::size_t>(cls)];
  if (stands) ++counts.failures;
}

/// A quick run's deadline miss counts only once confirmed (hang, spin, slow, or noise), except
/// for a saturated kind, whose misses are hits of a failure already understood, and a kind
/// already confirmed as a finding.
TrialResult Worker::classified(const Sequence& seq, TrialResult t) {
  if (!t.evidence.stuck || t.harnessError) return t;
  if (parts_.examiner.saturated(t.outcome) || trials_.isConfirmedKind(t.outcome) ||
      parts_.triage.awaitVerdict(t.outcome)) {
    trials_.countSkippedConfirmation();
    return t;
  }
  // Stuck or late again, the long confirmation takes its stacks while a known crash has a
  // runtime entry point: a hang, spin or slow under it is that crash's (keptUnderCrash).
  const bool stacks =
      trials_.setup().captureStacks && t.outcome.fault.empty() && store_.hasCrashEntries();
  const TrialMode mode = stacks ? TrialMode::Evidence : TrialMode::Confirmed;
  return trials_.run(seq, mode, std::nullopt, t.attempt);
}

/// A persistent run that did not pass, re-run in a fresh process: alone, and when it passes
/// there, after the last 1, 2, 4, ... sequences its process ran before it (concatenated as one
/// sequence), until it fails or all of them were tried. `failing` and `t` become what failed in
/// the fresh process (or the pass alone, when nothing did); returns how many sequences before it
/// that needed.
/// `hit`: set when the persistent failure's crash frames became a known cause's meanwhile (a
/// worker examining them confirmed it): the re-runs stop there, and `t` is the persistent one.
std::size_t Worker::rerunFresh(Sequence& failing, TrialResult& t, bool& hit,
                               const std::string& underCrash) {
  const bool harnessFailed = t.harnessError.has_value();
  const std::vector<Sequence> before = std::move(t.before);
  const TrialResult persistentRun = t;
  const OutcomeClass persistentClass = t.outcome.cls;
  const Sequence seq = failing;
  t = classified(seq, trials_.run(seq, TrialMode::Quick));
  if (harnessFailed) return 0;  // the persistent child failed in the harness: this stands
  RunCounts& counts = parts_.counts;
  ++counts.persistentFailures;
  if (!t.harnessError && t.outcome.cls == persistentClass) ++counts.persistentSame;
  // A hang or spin stuck under a known crash's runtime entry point (stuckUnderCrash) is its
  // hit when no fresh run fails: its persistent process's stacks said where it was.
  const auto stuckHit = [&] {
    if (underCrash.empty() || parts_.stops.requested()) return false;
    parts_.triage.countTriageHit(underCrash);
    t = persistentRun;
    return hit = true;
  };
  if (t.outcome.failed() || t.harnessError) return 0;
  if (before.empty()) {
    stuckHit();
    return 0;
  }
  // 1, 2, 4, ... sequences before it, the last try all of them.
  for (std::size_t k = 1; !parts_.stops.requested(); k = std::min(2 * k, before.size())) {
    if (parts_.triage.persistentHit(seq, persistentRun, /*wait=*/false)) {
      hit = true;
      t = persistentRun;
      return 0;
    }
    std::vector<Sequence> parts(before.end() - static_cast<std::ptrdiff_t>(k), before.end());
    parts.push_back(seq);
    const Sequence whole = concatenate(parts);
    TrialResult r = classified(whole, trials_.run(whole, TrialMode::Quick));
    if (r.outcome.failed() && !r.harnessError) {
      ++counts.persistentNeededHistory;
      failing = whole;
      t = std::move(r);
      return k;
    }
    if (k == before.size()) break;
  }
  stuckHit();
  return 0;
}

}  // namespace gpufuzz
