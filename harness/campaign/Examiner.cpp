// Examiner.cpp: failures triaged, confirmed, shrunk and recorded, one shrink at a time.
#include "harness/campaign/Examiner.h"

#include <optional>

#include "harness/search/Minimize.h"

namespace gpufuzz {

Examiner::Examiner(const CampaignPlan& plan, TrialRunner& trials, FindingStore& store, Parts parts,
                   unsigned freshJobs)
    : plan_(plan), trials_(trials), store_(store), parts_(parts), freshJobs_(freshJobs) {}

Examiner::Handled Examiner::onFailure(const Sequence& seq, uint64_t seqSeed, const TrialResult& t,
                                      std::size_t ranBefore, uint64_t k) {
  // A failure whose first run settles a known cause (a crash's frames, a planted rule, an
  // error's verdict) is a hit of it, and costs no shrink unless it came at an operation that
  // cause has no variant for yet.
  Triage& triage = parts_.triage;
  const Triaged triaged = triage.assess(seq, t);
  if (triaged.hit) {
    triage.settlePoisoned(triage.ownClaims(), t.outcome, triaged.cause);
    return Handled::Stands;
  }
  if (triaged.cause.empty() && triage.keptUnderCrash(seq, seqSeed, t, ranBefore))
    return Handled::Stands;
  bool stands = false;
  if (plan_.persistent <= 1) {
    stands = examine(seq, seqSeed, t, ranBefore, triaged, false, {});
  } else {
    const bool queued = parts_.turns.queueOrExamine([&] {
      QueuedFailure q{seq, seqSeed, t, ranBefore, k, triaged, {}};
      q.claims = triage.handOverClaims();  // other workers still defer to its verdict
      return q;
    });
    if (queued) return Handled::Queued;
    // Cut short by an exception (a file that cannot be written), the queue is unexamined.
    struct EndExaminer {
      Examiner* examiner;
      bool drained = false;
      ~EndExaminer() {
        if (!drained) examiner->endExaminer();
      }
    } endExaminer{this};
    const Turns::Shrink shrink = parts_.turns.takeShrink();
    stands = examine(seq, seqSeed, t, ranBefore, triaged, true, triage.ownClaims());
    drainQueued();
    endExaminer.drained = true;
  }
  parts_.sink.explainPending();
  return stands ? Handled::Stands : Handled::Dropped;
}

bool Examiner::saturated(const RunOutcome& o) const {
  std::lock_guard lock(mutex_);
  const auto it = kindRepeats_.find(failureKind(o));
  return it != kindRepeats_.end() && it->second >= kSaturatedAfter;
}

std::string Examiner::activity() const {
  std::lock_guard lock(mutex_);
  return shrinking_;
}

/// After a stop the queued failures are unexamined, their sequences unfinished for a resumed
/// campaign.
void Examiner::drainQueued() {
  while (std::optional<QueuedFailure> q = parts_.turns.next()) {
    if (parts_.stops.requested()) {
      leaveUnexamined(*q);
    } else {
      // examine() counts it a hit if its cause became known meanwhile.
      if (!examine(q->seq, q->seqSeed, q->t, q->ranBefore, q->triaged, true, q->claims))
        --parts_.counts.failures;
      parts_.schedule.done(q->k);
    }
    parts_.triage.endQueuedClaims(q->claims);
  }
}

void Examiner::endExaminer() {
  for (const QueuedFailure& q : parts_.turns.endExaminer()) {
    leaveUnexamined(q);
    parts_.triage.endQueuedClaims(q.claims);
  }
}

/// A queued failure no examination will take (a stop came): a hit of its cause known by now, its
/// sequence done, or unexamined, its sequence unfinished for a resumed campaign.
void Examiner::leaveUnexamined(const QueuedFailure& q) {
  if (parts_.triage.knownCauseHit(q.triaged)) {
    parts_.schedule.done(q.k);
  } else {
    parts_.triage.countUnexamined(q.t.outcome.cls);
  }
}

/// Shrinks a failure that triage did not settle, and records it; whether it stands. Takes the
/// shrink unless its caller holds it (`shrinkHeld`).
bool Examiner::examine(const Sequence& seq, uint64_t seqSeed, const TrialResult& t,
                       std::size_t ranBefore, const Triaged& triaged, bool shrinkHeld,
                       const std::vector<std::string>& claims) {
  const std::string kind = failureKind(t.outcome);
  if (saturatedRepeat(kind)) return true;
  std::optional<Turns::Shrink> shrink;
  if (!shrinkHeld) shrink.emplace(parts_.turns.takeShrinkInTurn(triaged.newSite));
  // After a stop request nothing new starts; once the time and grace are spent, a failure found
  // in time is still saved, its shrink cut short. Once the shrink window closes, what is left of
  // the grace confirms the shrinks under way, and a failure whose run settled its cause,
  // unshrunk: one met just before the window closes would wait for its history's re-runs.
  const bool unshrunk = trials_.shrinkClosed();
  if (parts_.stops.requested() || (unshrunk && triaged.cause.empty())) {
    if (parts_.triage.knownCauseHit(triaged)) return true;
    parts_.triage.countUnexamined(t.outcome.cls);
    return false;
  }
  if (settledMeanwhile(seq, seqSeed, t, ranBefore, triaged, claims)) return true;
  // The status shows the class and operation: a planted kind's rule is long.
  setActivity((unshrunk ? "confirming " : "shrinking ") +
              std::string(outcomeClassName(t.outcome.cls)) + "/" + t.outcome.op);
  parts_.turns.examining(triaged.examinedAs(t.outcome));
  bool turnEnded = false;
  Finding f = shrunk(seq, seqSeed, t, ranBefore, triaged, unshrunk, turnEnded);
  // A crash under the same runtime entry point may have been recorded during the shrink.
  const std::string under = parts_.triage.stuckUnderCrash(f.outcome, f.stacks);
  if (!under.empty()) Triage::markUnderCrash(f, under);
  if (!noteEnd(f, turnEnded)) {
    setActivity({});
    return false;
  }
  return record(f, kind, under, claims);
}

/// Counts a hit of `kind`; whether its kind is saturated and this hit is not a 2^k-th one.
bool Examiner::saturatedRepeat(const std::string& kind) {
  std::lock_guard lock(mutex_);
  const uint64_t seen = ++kindHits_[kind];
  const bool powerOfTwo = (seen & (seen - 1)) == 0;
  return kindRepeats_[kind] >= kSaturatedAfter && !powerOfTwo;
}

/// Whether another worker shrank the same crash site, or the same planted race, while this
/// failure waited, or a crash it is stuck under was recorded: then it is a hit, counted.
bool Examiner::settledMeanwhile(const Sequence& seq, uint64_t seqSeed, const TrialResult& t,
                                std::size_t ranBefore, const Triaged& triaged,
                                const std::vector<std::string>& claims) {
  Triage& triage = parts_.triage;
  if (triaged.cause.empty()) {
    return triage.keptUnderCrash(seq, seqSeed, t, ranBefore) ||
           !triage.plantedRaceHit(seq, t).empty();
  }
  if (triaged.variant || !triage.knownHit(triaged.cause, t.outcome.op)) return false;
  triage.settlePoisoned(claims, t.outcome, triaged.cause);
  return true;
}

/// The failure shrunk and confirmed, or once the window closed confirmed unshrunk. `turnEnded`:
/// set when its turn, not the shrink window, cut the shrink short (Turns::turnOver).
Finding Examiner::shrunk(const Sequence& seq, uint64_t seqSeed, const TrialResult& t,
                         std::size_t ranBefore, const Triaged& triaged, bool unshrunk,
                         bool& turnEnded) {
  Shrinker shrinker(trials_, freshJobs_);
  if (auto over = parts_.turns.turnOver(triaged.examinedAs(t.outcome))) {
    shrinker.endTurnWhen(
        [&turnEnded, over = std::move(over)] { return turnEnded = turnEnded || over(); });
  }
  const MinimizeRequest request{seq,
                                t,
                                seqSeed,
                                parts_.schedule.foundText(seqSeed, ranBefore),
                                plan_.confirmations,
                                !triaged.variant};
  if (unshrunk) {
    Finding f = confirmedUnshrunk(shrinker, trials_, request);
    f.minimal.directives.notes.push_back(
        "not shrunk: met once the shrink window had closed; its cause is its run's");
    return f;
  }
  return minimizeFailure(shrinker, trials_, request, {}, [this](const Finding& candidate) {
    return store_.knows(candidate.signature());
  });
}

/// Notes where `f` was found and why its shrink ended early, if it did. False when its minimal
/// sequence never reproduced: a timing accident, not a finding.
bool Examiner::noteEnd(Finding& f, bool turnEnded) {
  f.executionsToFind = trials_.executions();
  std::vector<std::string>& notes = f.minimal.directives.notes;
  notes.push_back("found on " + plan_.deviceDescription);
  if (parts_.stops.requested()) {
    // Nothing found is lost: a shrink cut short keeps its best sequence so far, marked so.
    notes.push_back(
        parts_.stops.userRequested()
            ? "shrink interrupted by a stop: may not be minimal"
            : "shrink cut short when --time and --grace were spent: may not be minimal");
  } else if (f.confirmations > 0 && f.reproduced == 0) {
    ++parts_.counts.unconfirmed;
    return false;
  } else if (f.shrinkCutShort && turnEnded) {
    notes.push_back(
        "shrink cut short to give the failures queued behind it their turn: may not be minimal");
  } else if (f.shrinkCutShort) {
    notes.push_back(
        "shrink cut short to leave the last fifth of --grace to its confirmations: may not be "
        "minimal");
  }
  return true;
}

/// Records `f` in the store; a new finding goes to the sink. `under`: the crash cause it is
/// stuck under, if any. Its kind's repeats count shrinks that found nothing new.
bool Examiner::record(const Finding& f, const std::string& kind, const std::string& under,
                      const std::vector<std::string>& claims) {
  if (f.reproduced > 0) trials_.markConfirmedKind(f.outcome);
  const bool knewSignature = store_.knows(f.signature());
  const auto [isNew, dir] = store_.record(f);
  parts_.triage.settleDeferred(causeKey(f));
  if (!f.stopped && f.reproduced > 0) parts_.triage.settlePoisoned(claims, f.outcome, causeKey(f));
  parts_.triage.recorded(f, !under.empty(), isNew, knewSignature);
  {
    std::lock_guard lock(mutex_);
    shrinking_.clear();
    kindRepeats_[kind] = isNew ? 0 : kindRepeats_[kind] + 1;
  }
  if (isNew) parts_.sink.add(f, dir);
  return true;
}

void Examiner::setActivity(std::string text) {
  {
    std::lock_guard lock(mutex_);
    shrinking_ = std::move(text);
  }
  if (parts_.activityChanged) parts_.activityChanged();
}

}  // namespace gpufuzz
