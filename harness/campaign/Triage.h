// Triage.h: what a campaign knows of failure causes before any shrink, and the tally of what
// became of each failure (docs/campaigns.md, "Triage").
//
// The contract:
// - assess() settles a failure's cause from its first run where it can (Cause.h). A crash's
//   frames, a planted rule and an error's verdict each settle one.
// - A known cause at an operation it has a witness for is a hit. It is counted here and in the
//   store, and costs no shrink.
// - A known cause at a new operation is a variant, shrunk once for its witness. A cause no
//   finding has is a new site.
// - A hang, spin or slow may be stuck in the runtime call a known crash died in. Then it is that
//   crash's (keptUnderCrash): its first at each class and operation is kept unshrunk.
// - Claims keep two workers from examining one thing twice. A deadline miss claims its kind
//   while it is confirmed; another worker's miss of that kind waits for the verdict.
// - With --persistent, a failure of an unknown cause claims that cause (Claims.h). Other
//   workers' failures of it are deferred, and its verdict settles them as hits.
// - A claim's failure may re-run fresh as another known crash. Its process was poisoned by that
//   crash, whose hits its cause's failures count as (settlePoisoned).
// - The tally counts causes confirmed, variants, hits by triage, and failures left unexamined.
//
// Thread-safe: `mutex_` guards the causes' operations, the claims, the poisoned causes and the
// tally. `verdict_` wakes the workers waiting for a kind's verdict. The Turns lock may be held
// while it is taken, never the other way round: a queued failure takes its claims in one step.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "harness/campaign/Claims.h"
#include "harness/campaign/FindingStore.h"
#include "harness/campaign/SeedSchedule.h"
#include "harness/campaign/Stops.h"
#include "harness/search/Trial.h"

namespace gpufuzz {

/// What triage made of a failure: its cause when its first run settles one, and whether it is a
/// hit of a known cause (counted already), a variant of one, or a new cause, shrunk first.
struct Triaged {
  std::string cause;
  bool hit = false;
  bool variant = false;
  bool newSite = false;
  /// What a shrink examines it as: its settled cause, else its kind.
  std::string examinedAs(const RunOutcome& o) const;
};

class Triage {
 public:
  Triage(TrialRunner& trials, FindingStore& store, const Stops& stops, const SeedSchedule& schedule,
         std::string deviceDescription);

  /// A failure's first verdict, before any shrink; a hit is counted already.
  Triaged assess(const Sequence& seq, const TrialResult& t);
  /// Whether `cause` is known at `op`: then the failure is counted as a hit of it.
  bool knownHit(const std::string& cause, const std::string& op);
  /// A threaded failure a rule planted is that rule's, whether or not its minimal sequence keeps
  /// its threads: once either form is known at its operation, a hit, counted, and its cause is
  /// returned; else empty.
  std::string plantedRaceHit(const Sequence& seq, const TrialResult& t);
  /// A hang, spin or slow under a known crash's runtime entry point, kept as a variant of it or
  /// counted as its hit. Whether it was one.
  bool keptUnderCrash(const Sequence& seq, uint64_t seqSeed, const TrialResult& t,
                      std::size_t ranBefore);
  /// A persistent process's failure that is a known cause's hit, counted without a fresh re-run.
  /// With `wait`, a failure of an unknown cause another worker claims is deferred to its verdict
  /// (true); else the caller claims it.
  bool persistentHit(const Sequence& seq, const TrialResult& t, bool wait = true);
  /// A failure whose examination no longer starts (a stop, the shrink window closed) is still a
  /// hit when its settled cause is known by now. Whether it was one.
  bool knownCauseHit(const Triaged& triaged);

  /// The known crash cause an unplanted hang, spin or slow is stuck under; empty when none.
  std::string stuckUnderCrash(const RunOutcome& o, const std::string& stacks) const;
  /// What a stuck variant is kept as at its cause: its class and operation, never an
  /// operation's name, so a crash at that operation is still a new variant.
  static std::string stuckVariantOp(const RunOutcome& o);
  /// Makes stuck finding `f` a variant of crash cause `cause`, saying why in its notes.
  static void markUnderCrash(Finding& f, const std::string& cause);

  /// Whether a miss's kind was confirmed meanwhile by the worker that met it first; else the
  /// caller claims the kind and confirms it. A worker holding a claim never waits.
  bool awaitVerdict(const RunOutcome& miss);
  /// Ends the calling worker's claims on kinds (awaitVerdict), once its sequence is done.
  void releaseKindClaims();

  /// The causes the calling worker claimed for the failure it examines now.
  std::vector<std::string> ownClaims() const;
  /// Hands the calling worker's claims on causes to its queued failure; returns their causes.
  std::vector<std::string> handOverClaims();
  /// Ends the calling worker's claims on causes, once its sequence is done.
  void endOwnClaims();
  /// Ends the claims a queued failure took with it (handOverClaims).
  void endQueuedClaims(const std::vector<std::string>& claims);
  /// A claim's failure re-ran as `fresh`, of known `cause`: its process was poisoned by that.
  void settlePoisoned(const std::vector<std::string>& claims, const RunOutcome& fresh,
                      const std::string& cause);
  /// The failures deferred to `cause`'s verdict become its hits, now that it is recorded.
  void settleDeferred(const std::string& cause);
  /// Once every worker is done: the failures still deferred become hits, or unexamined.
  void settleLeftDeferred();

  /// One failure counted as a hit of known `cause`: in the tally and on disk.
  void countTriageHit(const std::string& cause);
  /// A failure no examination took, by class.
  void countUnexamined(OutcomeClass cls);
  /// A finding recorded by a shrink: its operation is a witness of its cause; it counts as a
  /// cause confirmed (new) or a variant (a new signature of a known cause).
  void recorded(const Finding& f, bool underCrash, bool isNew, bool knewSignature);

  struct Tally {
    uint64_t confirmed = 0, variants = 0, triageHits = 0, queuedFailures = 0;
    ClassCounts unexamined{};
  };
  Tally tally() const;
  /// "1 cause(s) confirmed (2 variant(s), 40 hit(s) by triage); unexamined 3: crash 2, spin 1";
  /// `queued`: the failures waiting for the examiner.
  std::string tallyText(uint64_t queued) const;

 private:
  std::string settledCause(const Sequence& seq, const TrialResult& t, bool freshFrames = true);
  TrialResult withStuckStacks(const Sequence& seq, const TrialResult& t);
  std::string knownAsLocked(const std::string& cause) const;
  KnownAs knownAsLocked() const;
  uint64_t takeDeferredLocked(const std::string& cause);
  void endClaims(const std::function<bool(const std::string&, std::thread::id)>& ends);
  void countHits(const std::vector<DeferredHits>& hits);  // mutex_ not held

  /// The owner of a claim whose failure waits in the examiner's queue: no thread's.
  static inline const std::thread::id kQueuedClaim{};
  static constexpr std::size_t kStuckFramesNoted = 6;

  TrialRunner& trials_;
  FindingStore& store_;
  const Stops& stops_;
  const SeedSchedule& schedule_;
  const std::string deviceDescription_;
  mutable std::mutex mutex_;
  /// Each cause's operations that have a minimal sequence (its own or a variant's).
  std::map<std::string, std::set<std::string>> variantOps_;
  /// Each kind whose first miss a worker is confirming and shrinking, and that worker.
  std::map<std::string, std::thread::id> confirming_;
  std::condition_variable verdict_;
  /// Causes a worker re-runs or shrinks now, and the failures deferred to their verdicts.
  Claims claims_;
  /// Causes of persistent crashes whose fresh re-runs, with the process's history, failed as
  /// another cause: the process was poisoned by that one, whose hits they count as.
  std::map<std::string, std::string> poisonedBy_;
  /// Claimed causes that are unplanted crashes' frames.
  std::set<std::string> crashSites_;
  Tally tally_;
};

}  // namespace gpufuzz
