// Triage.cpp: causes settled before any shrink, claims on kinds and causes, and the tally.
#include "harness/campaign/Triage.h"

#include <algorithm>

#include "harness/search/Cause.h"
#include "harness/search/Minimize.h"
#include "harness/supervise/CrashSite.h"

namespace gpufuzz {

namespace {

/// A hang, a spin, or a slow operation no plan's rule planted: a failure whose stacks show
/// where the runtime's own thread waited.
bool unplantedStuckOrLate(const RunOutcome& o) {
  return (o.cls == OutcomeClass::Hang || o.cls == OutcomeClass::Spin ||
          o.cls == OutcomeClass::Slow) &&
         o.fault.empty();
}

}  // namespace

std::string Triaged::examinedAs(const RunOutcome& o) const {
  return cause.empty() ? failureKind(o) : cause;
}

Triage::Triage(TrialRunner& trials, FindingStore& store, const Stops& stops,
               const SeedSchedule& schedule, std::string deviceDescription)
    : trials_(trials),
      store_(store),
      stops_(stops),
      schedule_(schedule),
      deviceDescription_(std::move(deviceDescription)) {}

Triaged Triage::assess(const Sequence& seq, const TrialResult& t) {
  Triaged triaged;
  triaged.cause = settledCause(seq, t);
  if (triaged.cause.empty()) {
    triaged.cause = plantedRaceHit(seq, t);
    triaged.hit = !triaged.cause.empty();
    return triaged;
  }
  if (knownHit(triaged.cause, t.outcome.op)) {
    triaged.hit = true;
    return triaged;
  }
  std::lock_guard lock(mutex_);
  const auto known = store_.causes();
  if (known.contains(triaged.cause)) {
    // The cause at an operation new to it: shrunk once, as a variant; its later hits are free.
    triaged.variant = variantOps_[triaged.cause].insert(t.outcome.op).second;
    if (!triaged.variant) {
      ++tally_.triageHits;
      triaged.hit = true;
    }
  } else {
    triaged.newSite = true;
  }
  if (triaged.hit) store_.countHit(triaged.cause);
  return triaged;
}

/// Only a sequence on one thread: a threaded one's cause says whether its minimal sequence still
/// needs threads, which only its shrink tells. Empty when the cause needs the minimal sequence (a
/// leak, a wrong image, a hang nothing planted), or a crash has no frames. `freshFrames`: whether
/// a target's crash without frames may be run again under a debugger for them.
std::string Triage::settledCause(const Sequence& seq, const TrialResult& t, bool freshFrames) {
  if (seq.threadCount() > 1) return {};
  const RunOutcome& o = t.outcome;
  const bool verdict =
      (o.cls == OutcomeClass::Error || o.cls == OutcomeClass::Invalid) && !o.detail.empty();
  if (!o.fault.empty() || verdict) return failureCause(o, seq, trials_.setup().policy, {});
  if (o.cls != OutcomeClass::Crash) return {};
  std::string stacks = t.evidence.stacks;
  if (freshFrames && !isCrashText(stacks) && !trials_.setup().target.empty() &&
      trials_.setup().captureStacks) {
    const TrialResult fresh = trials_.run(seq, TrialMode::Evidence);
    if (!fresh.harnessError && fresh.outcome.cls == OutcomeClass::Crash)
      stacks = fresh.evidence.stacks;
  }
  if (crashState(stacks).empty()) return {};
  return failureCause(o, seq, trials_.setup().policy, stacks);
}

bool Triage::knownHit(const std::string& cause, const std::string& op) {
  {
    std::lock_guard lock(mutex_);
    const auto it = variantOps_.find(cause);
    if (it == variantOps_.end() || !it->second.contains(op)) return false;
  }
  countTriageHit(cause);
  return true;
}

std::string Triage::plantedRaceHit(const Sequence& seq, const TrialResult& t) {
  if (seq.threadCount() <= 1 || t.outcome.fault.empty()) return {};
  const Sequence oneThread;  // a planted cause reads only the thread count
  for (const Sequence* form : {&seq, &oneThread}) {
    std::string cause = failureCause(t.outcome, *form, trials_.setup().policy, {});
    if (knownHit(cause, t.outcome.op)) return cause;
  }
  return {};
}

/// A runtime that crashes in a call may spin in the same call when its state is broken
/// otherwise: one fault, three faces. A slow ctx_destroy may wait on the lock that a spin under
/// cuMemPoolDestroy holds.
std::string Triage::stuckUnderCrash(const RunOutcome& o, const std::string& stacks) const {
  if (!unplantedStuckOrLate(o) || stacks.empty() || isCrashText(stacks)) return {};
  return store_.crashCauseUnder(runtimeEntry(stacks));
}

std::string Triage::stuckVariantOp(const RunOutcome& o) {
  return std::string(outcomeClassName(o.cls)) + " at " + o.op;
}

void Triage::markUnderCrash(Finding& f, const std::string& cause) {
  f.cause = cause;
  const bool late = f.outcome.cls == OutcomeClass::Slow;
  f.minimal.directives.notes.push_back((late ? "late in " : "stuck in ") + runtimeEntry(f.stacks) +
                                       ", the runtime's call its cause's crash died in: a "
                                       "variant of that cause");
  // A variant keeps no stacks file: its thread's top frames go in its note.
  std::string frames;
  for (const std::string& name : topFrames(f.stacks, kStuckFramesNoted))
    frames += (frames.empty() ? "" : " < ") + name;
  f.minimal.directives.notes.push_back((late ? "its late thread: " : "its stuck thread: ") +
                                       frames);
}

/// A miss of a kind already confirmed skips its confirmation, and with it the stacks: one run
/// that takes them costs less than the shrink the failure needs otherwise.
TrialResult Triage::withStuckStacks(const Sequence& seq, const TrialResult& t) {
  const RunOutcome& o = t.outcome;
  if (!unplantedStuckOrLate(o) || !t.evidence.stacks.empty() || !trials_.setup().captureStacks ||
      !store_.hasCrashEntries()) {
    return t;
  }
  TrialResult again = trials_.run(seq, TrialMode::Evidence, std::nullopt, t.attempt);
  const bool same = !again.harnessError && again.outcome.cls == o.cls && again.outcome.op == o.op;
  return same ? again : t;
}

bool Triage::keptUnderCrash(const Sequence& seq, uint64_t seqSeed, const TrialResult& t,
                            std::size_t ranBefore) {
  const TrialResult framed = withStuckStacks(seq, t);
  const std::string cause = stuckUnderCrash(framed.outcome, framed.evidence.stacks);
  if (cause.empty()) return false;
  bool first = false;
  {
    std::lock_guard lock(mutex_);
    first = variantOps_[cause].insert(stuckVariantOp(t.outcome)).second;
  }
  if (!first) {
    countTriageHit(cause);
    return true;
  }
  Finding f = unshrunkFinding(
      trials_,
      MinimizeRequest{seq, framed, seqSeed, schedule_.foundText(seqSeed, ranBefore), 0, false});
  markUnderCrash(f, cause);
  f.minimal.directives.notes.push_back("not shrunk: its cause's crash was shrunk");
  f.minimal.directives.notes.push_back("found on " + deviceDescription_);
  const bool knew = store_.knows(f.signature());
  store_.record(f);
  std::lock_guard lock(mutex_);
  ++(knew ? tally_.triageHits : tally_.variants);
  return true;
}

/// The process may have been poisoned by a sequence it ran before, which is what the re-runs with
/// its history would look for, at the cost of long runs.
bool Triage::persistentHit(const Sequence& seq, const TrialResult& t, bool wait) {
  // Stuck under a known crash's runtime entry point, at a class and operation kept as its
  // variant already: a hit of that crash (keptUnderCrash keeps the first, from a fresh run).
  if (const std::string crash = stuckUnderCrash(t.outcome, t.evidence.stacks); !crash.empty())
    return knownHit(crash, stuckVariantOp(t.outcome));
  if (t.evidence.stuck && trials_.isConfirmedKind(t.outcome)) {
    trials_.countSkippedConfirmation();
    std::lock_guard lock(mutex_);
    ++tally_.triageHits;
    return true;
  }
  const std::string cause = settledCause(seq, t, /*freshFrames=*/false);
  if (cause.empty()) return false;
  std::string as;  // the known cause it counts as
  {
    std::lock_guard lock(mutex_);
    as = knownAsLocked(cause);
    if (as.empty()) {
      if (!wait) return false;
      // Another worker examining this cause takes the failure too: not examined twice. This
      // worker goes on fuzzing: waiting would hold every worker while one examines.
      if (!claims_.claimOrDefer(cause, std::this_thread::get_id(), t.outcome.cls)) return true;
      if (t.outcome.cls == OutcomeClass::Crash && t.outcome.fault.empty())
        crashSites_.insert(cause);
      return false;
    }
    ++tally_.triageHits;
  }
  store_.countHit(as);
  return true;
}

/// Its frames, rule or verdict settled that cause, so it is counted so, though its cause was
/// recorded while it waited: a variant's, one recorded since, or the cause that poisoned its
/// process.
bool Triage::knownCauseHit(const Triaged& triaged) {
  if (triaged.cause.empty()) return false;
  std::string as;
  {
    std::lock_guard lock(mutex_);
    as = knownAsLocked(triaged.cause);
    if (as.empty()) return false;
    ++tally_.triageHits;
  }
  store_.countHit(as);
  return true;
}

/// The known cause a persistent failure of `cause` counts as (mutex_ held): `cause` itself once
/// recorded, else the cause that poisoned processes failing so, else empty.
std::string Triage::knownAsLocked(const std::string& cause) const {
  const auto known = store_.causes();
  if (known.contains(cause)) return cause;
  const auto by = poisonedBy_.find(cause);
  return by != poisonedBy_.end() && known.contains(by->second) ? by->second : std::string();
}

KnownAs Triage::knownAsLocked() const {
  return [this](const std::string& cause) { return knownAsLocked(cause); };
}

/// A long confirmation of its own would cost the long deadline and hold a child slot the shrink
/// could use. No two workers wait for each other: one that holds a claim never waits.
bool Triage::awaitVerdict(const RunOutcome& miss) {
  const std::string kind = failureKind(miss);
  const auto self = std::this_thread::get_id();
  std::unique_lock lock(mutex_);
  const bool claims = std::any_of(confirming_.begin(), confirming_.end(),
                                  [&](const auto& c) { return c.second == self; });
  while (!claims && confirming_.contains(kind) && !stops_.requested()) {
    if (trials_.isConfirmedKind(miss)) return true;
    verdict_.wait_for(lock, std::chrono::milliseconds(50));
  }
  if (trials_.isConfirmedKind(miss)) return true;
  confirming_.try_emplace(kind, self);
  return false;
}

void Triage::releaseKindClaims() {
  {
    std::lock_guard lock(mutex_);
    std::erase_if(confirming_,
                  [self = std::this_thread::get_id()](const auto& c) { return c.second == self; });
  }
  verdict_.notify_all();
}

std::vector<std::string> Triage::ownClaims() const {
  std::lock_guard lock(mutex_);
  return claims_.heldBy(std::this_thread::get_id());
}

std::vector<std::string> Triage::handOverClaims() {
  std::lock_guard lock(mutex_);
  ++tally_.queuedFailures;
  return claims_.handOver(std::this_thread::get_id(), kQueuedClaim);
}

void Triage::endOwnClaims() {
  endClaims([self = std::this_thread::get_id()](const std::string&, std::thread::id owner) {
    return owner == self;
  });
}

void Triage::endQueuedClaims(const std::vector<std::string>& claims) {
  endClaims([&](const std::string& cause, std::thread::id owner) {
    return owner == kQueuedClaim && std::find(claims.begin(), claims.end(), cause) != claims.end();
  });
}

/// The failures still deferred to an ended claim's verdict become hits of a known cause. Those of
/// a cause still unknown wait on, unclaimed: the next failure of it that a worker meets claims
/// it, and its verdict settles them (settleDeferred). A claim's failure may re-run as another
/// cause: cuMemPoolCreate fails at `create` and at `ctx_create` alike.
void Triage::endClaims(const std::function<bool(const std::string&, std::thread::id)>& ends) {
  std::vector<DeferredHits> hits;
  {
    std::lock_guard lock(mutex_);
    hits = claims_.end(ends, knownAsLocked());
    for (const DeferredHits& h : hits)
      tally_.triageHits += h.hits;
  }
  countHits(hits);
}

/// Persistent failures of the claimed causes, deferred now or met later, count as hits of
/// `cause`; otherwise crashes deferred that way end unexamined. Only a crash site, by its frames,
/// counts so, and only as an unplanted crash: a planted rule names its own bug, and a crash's
/// frames may be a poisoned process's symptom.
void Triage::settlePoisoned(const std::vector<std::string>& claims, const RunOutcome& fresh,
                            const std::string& cause) {
  if (claims.empty() || cause.empty() || fresh.cls != OutcomeClass::Crash || !fresh.fault.empty()) {
    return;
  }
  uint64_t n = 0;
  {
    std::lock_guard lock(mutex_);
    const auto known = store_.causes();
    for (const std::string& claim : claims) {
      if (claim == cause || known.contains(claim) || !crashSites_.contains(claim)) continue;
      poisonedBy_.try_emplace(claim, cause);
      n += takeDeferredLocked(claim);
    }
  }
  if (n > 0) store_.countHit(cause, n);
}

/// The tally shows them at once, not when the examining worker's sequence ends.
void Triage::settleDeferred(const std::string& cause) {
  uint64_t n = 0;
  {
    std::lock_guard lock(mutex_);
    n = takeDeferredLocked(cause);
  }
  if (n > 0) store_.countHit(cause, n);
}

/// Takes the failures deferred to `cause`, now known, as its hits (mutex_ held): counted in the
/// tally, and returned for the store's counter.
uint64_t Triage::takeDeferredLocked(const std::string& cause) {
  const uint64_t n = total(claims_.take(cause));
  tally_.triageHits += n;
  return n;
}

void Triage::settleLeftDeferred() {
  std::vector<DeferredHits> hits;
  {
    std::lock_guard lock(mutex_);
    LeftDeferred left = claims_.takeLeft(knownAsLocked());
    for (std::size_t c = 0; c < left.unexamined.size(); ++c)
      tally_.unexamined[c] += left.unexamined[c];
    hits = std::move(left.hits);
    for (const DeferredHits& h : hits)
      tally_.triageHits += h.hits;
  }
  countHits(hits);
}

void Triage::countHits(const std::vector<DeferredHits>& hits) {
  for (const DeferredHits& h : hits)
    store_.countHit(h.as, h.hits);
}

void Triage::countTriageHit(const std::string& cause) {
  {
    std::lock_guard lock(mutex_);
    ++tally_.triageHits;
  }
  store_.countHit(cause);
}

void Triage::countUnexamined(OutcomeClass cls) {
  std::lock_guard lock(mutex_);
  ++tally_.unexamined[static_cast<std::size_t>(cls)];
}

void Triage::recorded(const Finding& f, bool underCrash, bool isNew, bool knewSignature) {
  std::lock_guard lock(mutex_);
  variantOps_[causeKey(f)].insert(underCrash ? stuckVariantOp(f.outcome) : f.outcome.op);
  if (f.stopped && !underCrash) ++tally_.unexamined[static_cast<std::size_t>(f.outcome.cls)];
  if (!isNew) {
    if (!knewSignature) ++tally_.variants;
  } else if (!f.stopped && (f.reproduced > 0 || f.confirmations == 0)) {
    ++tally_.confirmed;
  }
}

Triage::Tally Triage::tally() const {
  std::lock_guard lock(mutex_);
  return tally_;
}

std::string Triage::tallyText(uint64_t queued) const {
  std::lock_guard lock(mutex_);
  std::string text = std::to_string(tally_.confirmed) + " cause(s) confirmed (" +
                     std::to_string(tally_.variants) + " variant(s), " +
                     std::to_string(tally_.triageHits) + " hit(s) by triage)";
  std::string classes;
  for (std::size_t c = 0; c < tally_.unexamined.size(); ++c) {
    if (tally_.unexamined[c] == 0) continue;
    classes += (classes.empty() ? ": " : ", ") +
               std::string(outcomeClassName(static_cast<OutcomeClass>(c))) + " " +
               std::to_string(tally_.unexamined[c]);
  }
  // Failures queued for the examiner or deferred to another's verdict have no fate yet: the
  // status says so, since "unexamined 0" alone would hide a failure queued for minutes.
  const uint64_t waiting = queued + claims_.waiting();
  return text + "; unexamined " + std::to_string(total(tally_.unexamined)) + classes +
         (waiting > 0 ? ", waiting " + std::to_string(waiting) : std::string());
}

}  // namespace gpufuzz
