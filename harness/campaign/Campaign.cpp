// Campaign.cpp: generate sequences from a seed stream, run each in a child with deadlines,
// shrink each new failure, deduplicate by signature, and report as findings arrive.
//
// Fuzzing runs are quick: a stuck run counts as a hang or spin at once. A failure that will be
// shrunk is first confirmed (a stuck run re-run under the long deadline: hang, spin, slow or
// noise). One shrink runs at a time (its candidates use the --jobs child slots); other workers go
// on fuzzing. A failure kind (failureKind(): class and operation, or class and planted rule)
// whose last shrinks only found known signatures is saturated: later failures of that kind are
// shrunk only at the 2^k-th hit, the rest count as hits of the kind, so a campaign where most
// sequences fail one way keeps exploring. Only new signatures pay for reproduction runs and stack
// captures.
//
// The seed stream may be sharded across processes and machines (SeedStream.h). The status loop
// rewrites <out>/stats.json about once a second (StatsFile.h); a campaign in a folder where
// campaigns ran before continues their cumulative counts, as the findings store knows their
// findings.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "harness/base/AtomicFile.h"
#include "harness/base/Json.h"
#include "harness/base/RunConfig.h"
#include "harness/campaign/Campaign.h"
#include "harness/campaign/Claims.h"
#include "harness/campaign/ExamineOrder.h"
#include "harness/campaign/PlotData.h"
#include "harness/campaign/ReportFile.h"
#include "harness/campaign/SeedStream.h"
#include "harness/campaign/SequenceSource.h"
#include "harness/campaign/StatsFile.h"
#include "harness/search/Cause.h"
#include "harness/search/Explainer.h"
#include "harness/search/Minimize.h"
#include "harness/supervise/CrashSite.h"
#include "model/Generator.h"
#include "model/SequenceEdits.h"
#include "model/SplitMix.h"
#include "renderer/InputError.h"
#include "renderer/faults/FaultPlan.h"

namespace gpufuzz {

namespace {

/// "calls 1200 (31% overlapped)" for the status, or empty when no run made a runtime call.
std::string callsText(const RuntimeCalls& calls) {
  if (calls.calls == 0) return {};
  return "calls " + std::to_string(calls.calls) + " (" +
         std::to_string(100 * calls.overlapped / calls.calls) + "% overlapped)";
}

using Clock = std::chrono::steady_clock;
constexpr uint32_t kSaturatedAfter = 3;
/// The grace's last 1/kConfirmingShareOfGrace confirms the shrinks under way; none starts then.
constexpr int kConfirmingShareOfGrace = 5;

/// The end of a shrink's turn begun at `began`: its even share of the window left then, split
/// with `waiting` other causes.
Clock::time_point turnEnd(Clock::time_point began, Clock::time_point windowEnd,
                          std::size_t waiting) {
  return began + (windowEnd - began) / static_cast<Clock::rep>(waiting + 1);
}

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class Campaign {
 public:
  Campaign(const CampaignPlan& plan, TrialRunner& trials, FindingStore& store)
      : plan_(plan),
        trials_(trials),
        store_(store),
        gen_(plan.gen),
        seed_(plan.seed),
        shard_(plan.shard),
        source_(gen_, plan.guided, plan.seeds, store.root() / "queue") {}

  void run(std::optional<uint64_t> runs, std::optional<std::chrono::seconds> time) {
    runs_ = runs;
    deadline_ = time ? std::optional(started_ + *time) : std::nullopt;
    // Generation ends with the time; a shrink under way may finish within the grace, but for
    // its last fifth, which is its confirmations': a shrink that runs to the end of the grace
    // leaves its cause unconfirmed (bench/RESULTS.md).
    if (deadline_) {
      trials_.stopAt(*deadline_ + plan_.grace);
      trials_.shrinkUntil(shrinkWindowEnd());
    }
    std::vector<std::jthread> workers;
    for (unsigned w = 0; w < plan_.jobs; ++w)
      workers.emplace_back([this] { guarded([this] { work(); }); });
    writeStatsFile(false);
    std::jthread status([this](std::stop_token stop) { statusLoop(stop); });
    std::jthread periodic;
    if (plan_.periodic)
      periodic = std::jthread([this](std::stop_token stop) { periodicLoop(stop); });
    for (auto& w : workers)
      w.join();
    settleLeftDeferred();
    status.request_stop();
    status.join();
    if (periodic.joinable()) {
      periodic.request_stop();
      periodic.join();
    }
    writeStatsFile(true);
    appendPlotLine(true);
  }

  /// This run's stats, over the counts of the earlier campaigns in the folder.
  CampaignStats stats(bool finished) const {
    std::lock_guard lock(mutex_);
    CampaignStats s = statsIdentity_;
    s.startTime = startedUnix_;
    s.lastUpdate = unixNow();
    s.lastFind = lastFindUnix_ ? lastFindUnix_ : previous_ ? previous_->lastFind : std::nullopt;
    s.deadline = trials_.deadlines().describe();
    s.deadlineByKind = trials_.deadlines().describeKinds();
    s.childrenByGpu = trials_.childrenByGpu();
    s.shrinking = activityLocked();
    s.nextSequence = std::max(frontier_, startedUpTo_);
    s.search = source_.guided() ? "guided" : "blind";
    s.signals = source_.signals();
    s.queue = source_.queued();
    s.mutants = mutantRuns_.load();
    s.answers = source_.answers();
    s.unfinished.assign(unfinished_.begin(), unfinished_.end());
    s.run.campaigns = 1;
    s.run.executions = trials_.executions();
    s.run.sequences = sequences_.load();
    s.run.calls = trials_.calls().calls;
    s.run.callsOverlapped = trials_.calls().overlapped;
    for (std::size_t c = 0; c < byClass_.size(); ++c)
      s.run.byClass[c] = byClass_[c].load();
    s.run.failures = failures_.load();
    s.run.unconfirmed = unconfirmed_.load();
    s.run.longConfirmations = trials_.longConfirmations() - confirmationsBefore_.first;
    s.run.confirmationsSkipped = trials_.confirmationsSkipped() - confirmationsBefore_.second;
    s.run.harnessErrors = harnessErrors_.load();
    s.run.persistentFailures = persistentFailures_.load();
    s.run.persistentSame = persistentSame_.load();
    s.run.persistentNeededHistory = persistentNeededHistory_.load();
    s.run.confirmedCauses = confirmed_;
    s.run.variants = variants_;
    s.run.triageHits = triageHits_;
    s.run.queuedFailures = queuedFailures_;
    s.run.unexaminedByClass = unexamined_;
    s.run.unexamined = total(unexamined_);
    s.run.runTimeSeconds = secondsSince(started_);
    s.execsPerSecond = s.run.runTimeSeconds > 0
                           ? static_cast<double>(s.run.executions) / s.run.runTimeSeconds
                           : 0.0;
    s.uniqueFindings = store_.size();
    s.newFindings = findings_.size();
    s.finished = finished && stopReason_.empty() && !broken_;
    s.stopped = finished && !s.finished;
    if (s.stopped) {
      s.stopReason = !unsupported_.empty() ? "the target cannot run the model: " + unsupported_
                     : broken_             ? "most runs failed in the harness itself"
                                           : stopReason_;
    }
    if (previous_) s.cumulative = previous_->cumulative;
    s.cumulative += s.run;
    return s;
  }

  Report report() const {
    std::lock_guard lock(mutex_);
    Report r = reportUnlocked();
    std::string byClass = "{";
    for (std::size_t c = 0; c < byClass_.size(); ++c) {
      byClass += (c ? ", " : "") + jsonName(static_cast<OutcomeClass>(c)) + ": " +
                 std::to_string(byClass_[c].load());
    }
    r.extra.emplace_back("by_class", byClass + "}");
    r.extra.emplace_back("sequences", std::to_string(sequences_.load()));
    r.extra.emplace_back("shard", statsIdentity_.shard
                                      ? jsonString(shardText(*statsIdentity_.shard))
                                      : std::string("null"));
    r.extra.emplace_back("harness_errors", std::to_string(harnessErrors_.load()));
    r.extra.emplace_back("unconfirmed", std::to_string(unconfirmed_.load()));
    r.extra.emplace_back("tally", jsonString(tallyText()));
    return r;
  }

  /// Failures this run that stand: recorded findings (new or known) and hits of saturated kinds.
  /// A failure whose minimal sequence never reproduced was noise and does not count.
  uint64_t failuresFound() const { return failures_.load() + failuresCutShort_.load(); }

  /// Causes this run confirmed and bucketed: not those a stop cut short.
  std::size_t uniqueFindings() const {
    std::lock_guard lock(mutex_);
    return confirmed_;
  }
  bool harnessBroken() const { return broken_.load() && unsupported_.empty(); }
  /// The file that could not be written and why, when one could not; empty otherwise.
  std::string writeFailure() const {
    std::lock_guard lock(mutex_);
    return writeFailure_;
  }
  /// What the target said it cannot run, when it said so; empty otherwise.
  std::string unsupported() const {
    std::lock_guard lock(mutex_);
    return unsupported_;
  }
  /// What the status display shows, read at one instant.
  struct Status {
    double elapsed = 0, rate = 0;
    uint64_t executions = 0, sequences = 0;
    std::string classes;     // " pass=12 hang=1"
    std::size_t unique = 0;  // causes confirmed this run
    std::string tally;       // tallyText()
    std::string lastFind, deadline, shrinking;
    std::string persistent;  // --persistent: how often a fresh process agreed
    std::string calls;       // "calls 1200 (31% overlapped)", when runtime calls were made
    std::string search;      // "signals 812", and ", queue 97, mutants 40" under guided search
  };
  Status status() const;
  /// One line, for logs and the final summary.
  std::string statusLine() const;
  /// The block a terminal shows, refreshed in place.
  std::vector<std::string> statusBlock() const;

 private:
  static std::string jsonName(OutcomeClass c) {
    return "\"" + std::string(outcomeClassName(c)) + "\"";
  }

  /// Whether generation goes on: no stop, a working harness, time left (mutex_ held; the runs
  /// are counted by take()).
  bool budgetLeft() const {
    if (stopRequested() || broken_ || writeFailed_) return false;
    return !deadline_ || Clock::now() < *deadline_;
  }

  void work() {
    std::optional<PersistentRuns> persistent;
    if (plan_.persistent > 1) persistent.emplace(plan_.persistent);
    for (std::optional<uint64_t> k = take(); k; k = take()) {
      // Until it is done, the sequence is where a resumed campaign goes on: one cut short by a
      // stop counts nothing here and is run again then.
      const uint64_t seqSeed = sequenceSeed(seed_, streamIndex(shard_, *k));
      if (!runOne(*k, source_.draw(*k, seqSeed), seqSeed, persistent)) return;
      // Guided search: mutants of kept sequences after the stream's own, more of them as fresh
      // generation stops adding signals. They take no index of the stream, so every sequence
      // blind search would run still runs (SequenceSource.h).
      const uint32_t mutants = source_.mutantsAfter(seqSeed);
      for (uint32_t m = 0; m < mutants && !stopRequested(); ++m) {
        {
          std::lock_guard lock(mutex_);
          if (!budgetLeft()) break;
        }
        const uint64_t mutantSeed = splitmix64(seqSeed + m + 1);
        std::optional<SequenceSource::Drawn> drawn = source_.mutant(mutantSeed);
        if (!drawn) break;
        if (!runOne(kMutant, std::move(*drawn), mutantSeed, persistent)) return;
      }
    }
  }

  /// A mutant's place in the stream: none. Counted apart from the stream's sequences, and never
  /// left unfinished for a resumed campaign.
  static constexpr uint64_t kMutant = UINT64_MAX;

  /// Runs one sequence, at shard counter `k` or a mutant (kMutant), and handles its failure;
  /// false when the worker stops (a stop, a broken harness, a target that cannot run the model).
  bool runOne(uint64_t k, SequenceSource::Drawn drawn, uint64_t seqSeed,
              std::optional<PersistentRuns>& persistent) {
    const struct Release {
      Campaign* campaign;
      ~Release() { campaign->releaseClaims(); }
    } release{this};
    const struct EndExamining {
      Campaign* campaign;
      ~EndExamining() { campaign->endExamining(); }
    } endExamining{this};
    const bool mutant = k == kMutant;
    // Its seed goes with it: a threaded sequence's schedules are drawn from it (ThreadLanes.h).
    drawn.seq.directives.seed = seqSeed;
    const Sequence& seq = drawn.seq;
    // What the run showed goes to guided search's queue before any re-run.
    const auto observed = [&](TrialResult r) {
      source_.observe(drawn, r);
      return r;
    };
    // A run of the stream counts as a sequence of its class; a mutant as a mutant run.
    const auto count = [&](OutcomeClass cls, bool stands) {
      if (mutant) {
        ++mutantRuns_;
        return;
      }
      ++sequences_;
      ++byClass_[static_cast<std::size_t>(cls)];
      if (stands) ++failures_;
    };
    // What failed, as a fresh process runs it: the sequence, or with --persistent perhaps the
    // sequences its process ran before it too.
    Sequence failing = seq;
    std::size_t ranBefore = 0;
    TrialResult t;
    if (!persistent) {
      t = observed(classified(seq, trials_.run(seq, TrialMode::Quick)));
    } else if (t = observed(trials_.runPersistent(*persistent, seq, store_.hasCrashEntries()));
               t.outcome.failed() || t.evidence.stuck || t.harnessError) {
      if (cutShort()) return false;
      bool hit = !t.harnessError && persistentHit(seq, t);
      if (!hit)
        ranBefore = rerunFresh(failing, t, hit, stuckUnderCrash(t.outcome, t.evidence.stacks));
      if (hit) {
        done(k);
        count(t.outcome.cls, true);
        return true;
      }
    }
    if (t.outcome.unsupported && !t.harnessError) {
      // Not a finding: the target lacks what the model asks of it. The campaign stops.
      std::lock_guard lock(mutex_);
      if (unsupported_.empty()) {
        unsupported_ =
            (t.outcome.op.empty() ? std::string() : "at " + t.outcome.op + ": ") + t.outcome.detail;
      }
      broken_ = true;
      return false;
    }
    if (t.harnessError) {
      if (cutShort()) return false;
      say(stderr, "gpufuzz: harness error on sequence seed %llu: %s\n",
          static_cast<unsigned long long>(seqSeed), t.harnessError->c_str());
      done(k);
      if (++harnessErrors_ >= 10 && harnessErrors_ * 2 > sequences_) broken_ = true;
      return true;
    }
    if (mutant && t.outcome.failed() && drawn.parent) {
      std::lock_guard lock(mutex_);
      mutantOf_.emplace(seqSeed, *drawn.parent);
    }
    const Handled handled =
        t.outcome.failed() ? onFailure(failing, seqSeed, t, ranBefore, k) : Handled::Dropped;
    if (handled == Handled::Queued) {
      // The examining worker finishes it (drainQueued), and marks it done then.
      count(t.outcome.cls, true);
      return true;
    }
    const bool stands = handled == Handled::Stands;
    if (cutShort()) {
      if (stands && !mutant) ++failuresCutShort_;
      return false;
    }
    done(k);
    count(t.outcome.cls, stands);
    return true;
  }

  /// A quick run's deadline miss counts only once confirmed (hang, spin, slow, or noise),
  /// except for a saturated kind, whose misses are hits of a failure already understood, and a
  /// kind already confirmed as a finding.
  TrialResult classified(const Sequence& seq, TrialResult t) {
    if (!t.evidence.stuck || t.harnessError) return t;
    if (saturated(t.outcome) || trials_.isConfirmedKind(t.outcome) || awaitVerdict(t.outcome)) {
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

  /// Whether a miss's kind was confirmed meanwhile by the worker that met it first. A miss of a
  /// kind under another worker's confirmation and shrink waits for their verdict: a long
  /// confirmation of its own would cost the long deadline and hold a child slot the shrink could
  /// use. Without a verdict for it, the miss claims its kind and is confirmed. A worker holding
  /// a claim never waits, so no two workers wait for each other.
  bool awaitVerdict(const RunOutcome& miss) {
    const std::string kind = failureKind(miss);
    const auto self = std::this_thread::get_id();
    std::unique_lock lock(mutex_);
    const bool claims = std::any_of(confirming_.begin(), confirming_.end(),
                                    [&](const auto& c) { return c.second == self; });
    while (!claims && confirming_.contains(kind) && !stopRequested()) {
      if (trials_.isConfirmedKind(miss)) return true;
      verdict_.wait_for(lock, std::chrono::milliseconds(50));
    }
    if (trials_.isConfirmedKind(miss)) return true;
    confirming_.try_emplace(kind, self);
    return false;
  }

  /// Ends the claims of the calling worker (awaitVerdict), once its sequence is done.
  void releaseClaims() {
    {
      std::lock_guard lock(mutex_);
      std::erase_if(confirming_, [self = std::this_thread::get_id()](const auto& c) {
        return c.second == self;
      });
    }
    verdict_.notify_all();
  }

  /// A persistent run that did not pass, re-run in a fresh process: alone, and when it passes
  /// there, after the last 1, 2, 4, ... sequences its process ran before it (concatenated as one
  /// sequence), until it fails or all of them were tried. `failing` and `t` become what failed
  /// in the fresh process (or the pass alone, when nothing did); returns how many sequences
  /// before it that needed.
  /// `hit`: set when the persistent failure's crash frames became a known cause's meanwhile (a
  /// worker examining them confirmed it): the re-runs stop there, and `t` is the persistent one.
  std::size_t rerunFresh(Sequence& failing, TrialResult& t, bool& hit,
                         const std::string& underCrash = {}) {
    const bool harnessFailed = t.harnessError.has_value();
    const std::vector<Sequence> before = std::move(t.before);
    const TrialResult persistentRun = t;
    const OutcomeClass persistentClass = t.outcome.cls;
    const Sequence seq = failing;
    t = classified(seq, trials_.run(seq, TrialMode::Quick));
    if (harnessFailed) return 0;  // the persistent child failed in the harness: this stands
    ++persistentFailures_;
    if (!t.harnessError && t.outcome.cls == persistentClass) ++persistentSame_;
    // A hang or spin stuck under a known crash's runtime entry point (stuckUnderCrash) is its
    // hit when no fresh run fails: its persistent process's stacks said where it was.
    const auto stuckHit = [&] {
      if (underCrash.empty() || stopRequested()) return false;
      countTriageHit(underCrash);
      t = persistentRun;
      return hit = true;
    };
    if (t.outcome.failed() || t.harnessError) return 0;
    if (before.empty()) {
      stuckHit();
      return 0;
    }
    // 1, 2, 4, ... sequences before it, the last try all of them.
    for (std::size_t k = 1; !stopRequested(); k = std::min(2 * k, before.size())) {
      if (persistentHit(seq, persistentRun, /*wait=*/false)) {
        hit = true;
        t = persistentRun;
        return 0;
      }
      std::vector<Sequence> parts(before.end() - static_cast<std::ptrdiff_t>(k), before.end());
      parts.push_back(seq);
      const Sequence whole = concatenate(parts);
      TrialResult r = classified(whole, trials_.run(whole, TrialMode::Quick));
      if (r.outcome.failed() && !r.harnessError) {
        ++persistentNeededHistory_;
        failing = whole;
        t = std::move(r);
        return k;
      }
      if (k == before.size()) break;
    }
    stuckHit();
    return 0;
  }

  /// The next sequence to run (a shard counter), begun; nullopt once the budget is spent. The
  /// sequences an earlier campaign left unfinished come first.
  std::optional<uint64_t> take() {
    std::lock_guard lock(mutex_);
    if (plan_.stopRequested && plan_.stopRequested()) {
      if (stopReason_.empty()) stopReason_ = "stop requested";
      return std::nullopt;
    }
    if (!budgetLeft()) return std::nullopt;
    uint64_t k = 0;
    if (!redo_.empty()) {
      k = *redo_.begin();
      redo_.erase(redo_.begin());
    } else {
      k = next_++;
      if (runs_ && streamIndex(shard_, k) >= *runs_) return std::nullopt;
      startedUpTo_ = std::max(startedUpTo_, k + 1);
    }
    unfinished_.insert(k);
    return k;
  }
  void done(uint64_t k) {
    std::lock_guard lock(mutex_);
    unfinished_.erase(k);
  }

  /// Whether this run was stopped while a sequence was under way (recorded): by a stop request,
  /// or by its time and grace spent; the sequence is then cut short, not done.
  bool cutShort() {
    if (!stopRequested()) return false;
    std::lock_guard lock(mutex_);
    if (stopReason_.empty()) {
      stopReason_ = plan_.stopRequested && plan_.stopRequested() ? "stop requested"
                                                                 : "--time and --grace spent";
    }
    return true;
  }

  /// Runs `f`; a file it cannot write (a full disk) stops the campaign (writeFailed).
  template <typename F>
  void guarded(F f) {
    try {
      f();
    } catch (const WriteError& e) {
      writeFailed(e);
    }
  }

  /// A file of the campaign could not be written: nothing new starts, runs under way are cut
  /// short (their sequences stay unfinished for a resumed campaign), and the campaign ends
  /// saying which file. What was written before stays whole (AtomicFile.h).
  void writeFailed(const WriteError& e) {
    {
      std::lock_guard lock(mutex_);
      if (!writeFailure_.empty()) return;
      writeFailure_ = e.what();
      stopReason_ = writeFailure_;
    }
    writeFailed_ = true;
    trials_.stopAt(Clock::now());
  }

  bool saturated(const RunOutcome& o) const {
    std::lock_guard lock(mutex_);
    const auto it = kindRepeats_.find(failureKind(o));
    return it != kindRepeats_.end() && it->second >= kSaturatedAfter;
  }

  /// Handles a failure: a hit of a saturated kind, or a shrink and a finding recorded. Whether
  /// the failure stands (not noise, not dropped by a stop). `ranBefore`: how many sequences of a
  /// persistent process `seq` (their concatenation with the one that failed) holds before the
  /// one generated with seqSeed.
  /// What triage made of a failure: its cause when its first run settles one (settledCause),
  /// whether it is a hit of a known cause (counted already), a variant of one (a known cause at
  /// a new operation: shrunk for its minimal sequence), or a new cause, shrunk first.
  struct Triage {
    std::string cause;
    bool hit = false;
    bool variant = false;
    bool newSite = false;
  };

  /// A failure waiting for the worker that shrinks (--persistent): its worker goes on fuzzing.
  struct Queued {
    Sequence seq;
    uint64_t seqSeed = 0;
    TrialResult t;
    std::size_t ranBefore = 0;
    uint64_t k = 0;
    Triage triage;                    // what triage made of it when it was queued
    std::vector<std::string> claims;  // causes its worker claimed to examine (persistentHit)
  };

  enum class Handled { Dropped, Stands, Queued };

  /// Handles a failure of sequence `k`: a hit, or a shrink and a finding recorded, or with
  /// --persistent queued for the worker that shrinks now (drainQueued). Dropped: noise, or cut
  /// short by a stop.
  Handled onFailure(const Sequence& seq, uint64_t seqSeed, const TrialResult& t,
                    std::size_t ranBefore, uint64_t k) {
    // Triage first: a failure whose first run settles a known cause (a crash's frames, a planted
    // rule, an error's verdict) is a hit of it, and costs no shrink unless it came at an
    // operation that cause has no variant for yet.
    const Triage triage = triaged(seq, t);
    if (triage.hit) {
      settlePoisoned(ownClaims(), t.outcome, triage.cause);
      return Handled::Stands;
    }
    if (triage.cause.empty() && keptUnderCrash(seq, seqSeed, t, ranBefore)) return Handled::Stands;
    if (plan_.persistent <= 1) {
      const bool stands = examine(seq, seqSeed, t, ranBefore, triage, false, {});
      explainPending();
      return stands ? Handled::Stands : Handled::Dropped;
    }
    // With --persistent one worker at a time examines, and the others queue their failures for
    // it and go on fuzzing: otherwise every worker stands waiting for the shrink.
    {
      std::unique_lock lock(mutex_);
      while (examinerActive_) {
        if (queued_.size() < kMostQueued) {
          queueLocked(seq, seqSeed, t, ranBefore, k, triage);
          return Handled::Queued;
        }
        turn_.wait_for(lock, std::chrono::milliseconds(50));
      }
      examinerActive_ = true;
    }
    bool stands = false;
    {
      // Cut short by an exception (a file that cannot be written), the queue is unexamined.
      struct EndExaminer {
        Campaign* campaign;
        bool drained = false;
        ~EndExaminer() {
          if (!drained) campaign->endExaminer();
        }
      } endExaminer{this};
      const std::unique_lock shrinking(shrinkMutex_);
      stands = examine(seq, seqSeed, t, ranBefore, triage, true, ownClaims());
      drainQueued();
      endExaminer.drained = true;
    }
    explainPending();
    return stands ? Handled::Stands : Handled::Dropped;
  }

  /// Failures queued at most; beyond, a worker waits until there is room.
  static constexpr std::size_t kMostQueued = 64;

  /// Queues a failure for the examining worker (mutex_ held); nextQueuedLocked picks the order.
  /// Its worker's claims on causes go with it, so other workers still defer to its verdict.
  void queueLocked(const Sequence& seq, uint64_t seqSeed, const TrialResult& t,
                   std::size_t ranBefore, uint64_t k, const Triage& triage) {
    ++queuedFailures_;
    Queued q{seq, seqSeed, t, ranBefore, k, triage, {}};
    q.claims = claims_.handOver(std::this_thread::get_id(), kQueuedClaim);
    queued_.push_back(std::move(q));
  }

  /// What a shrink examines a failure as: its settled cause, else its kind.
  static std::string examinedAs(const Triage& triage, const RunOutcome& o) {
    return triage.cause.empty() ? failureKind(o) : triage.cause;
  }

  /// Takes the queued failure to examine next (mutex_ held), by ExamineOrder.h: new sites, then
  /// kinds no shrink examined, then retries, then variants: a new kind does not wait behind
  /// the retries of failures whose shrinks did not confirm them.
  Queued nextQueuedLocked() {
    std::vector<WaitingFailure> waiting;
    waiting.reserve(queued_.size());
    for (const Queued& q : queued_)
      waiting.push_back({examinedAs(q.triage, q.t.outcome), q.triage.newSite, q.triage.variant});
    const auto next =
        queued_.begin() + static_cast<std::ptrdiff_t>(nextToExamine(waiting, examinedAs_));
    Queued q = std::move(*next);
    queued_.erase(next);
    return q;
  }

  /// The examining worker examines the queued failures one after another, until none is left,
  /// and gives up its place in the same step: a failure queued as it ends is never left behind.
  /// After a stop they are unexamined, their sequences unfinished for a resumed campaign.
  void drainQueued() {
    for (;;) {
      std::optional<Queued> q;
      {
        std::lock_guard lock(mutex_);
        if (queued_.empty()) {
          examinerActive_ = false;
          break;
        }
        q = nextQueuedLocked();
      }
      if (stopRequested()) {
        leaveUnexamined(*q);
      } else {
        // examine() counts it a hit if its cause became known meanwhile.
        const bool stands =
            examine(q->seq, q->seqSeed, q->t, q->ranBefore, q->triage, true, q->claims);
        if (!stands) --failures_;
        done(q->k);
      }
      endQueuedClaims(*q);
    }
    turn_.notify_all();
  }

  /// A queued failure no examination will take (a stop came): a hit of its cause known by now,
  /// its sequence done, or unexamined, its sequence unfinished for a resumed campaign.
  void leaveUnexamined(const Queued& q) {
    if (knownCauseHit(q.triage)) {
      done(q.k);
    } else {
      countUnexamined(q.t.outcome.cls);
    }
  }

  /// Ends the claims on causes that queued failure `q` took with it (queueLocked).
  void endQueuedClaims(const Queued& q) {
    endClaims([&](const std::string& cause, std::thread::id owner) {
      return owner == kQueuedClaim &&
             std::find(q.claims.begin(), q.claims.end(), cause) != q.claims.end();
    });
  }

  /// The examining worker was interrupted (an exception): another may take its place. What it
  /// left in the queue is unexamined.
  void endExaminer() {
    std::vector<Queued> left;
    {
      std::lock_guard lock(mutex_);
      examinerActive_ = false;
      left.assign(std::make_move_iterator(queued_.begin()), std::make_move_iterator(queued_.end()));
      queued_.clear();
    }
    for (const Queued& q : left) {
      leaveUnexamined(q);
      endQueuedClaims(q);
    }
    turn_.notify_all();
  }

  /// Shrinks a failure that triage did not settle, and records it; whether it stands. Takes the
  /// shrink unless its caller holds it (`shrinkHeld`).
  bool examine(const Sequence& seq, uint64_t seqSeed, const TrialResult& t, std::size_t ranBefore,
               const Triage& triage, bool shrinkHeld, const std::vector<std::string>& claims) {
    const std::string kind = failureKind(t.outcome);
    const std::string as = examinedAs(triage, t.outcome);
    // What the status line says: the class and operation (a planted kind's rule is long).
    const std::string shown = std::string(outcomeClassName(t.outcome.cls)) + "/" + t.outcome.op;
    {
      std::lock_guard lock(mutex_);
      const uint64_t seen = ++kindHits_[kind];
      const bool powerOfTwo = (seen & (seen - 1)) == 0;
      if (kindRepeats_[kind] >= kSaturatedAfter && !powerOfTwo) {
        return true;
      }
    }
    // New crash sites go first: other failures wait while one is waiting for the shrink.
    std::unique_lock<std::mutex> shrinking;
    if (!shrinkHeld) {
      waitTurn(triage.newSite);
      shrinking = std::unique_lock(shrinkMutex_);
      endTurn(triage.newSite);
    }
    // After a stop request nothing new starts; once the time and grace are spent, a failure
    // found in time is still saved, its shrink cut short.
    // Once the shrink window closes, what is left of the grace confirms the shrinks under way,
    // and a failure whose run settled its cause, unshrunk: otherwise one met just before the
    // window closes waits for its history's re-runs and is left unexamined.
    const bool unshrunk = trials_.shrinkClosed();
    if (stopRequested() || (unshrunk && triage.cause.empty())) {
      if (knownCauseHit(triage)) return true;
      countUnexamined(t.outcome.cls);
      return false;
    }
    // Another worker may have shrunk the same crash site, or the same planted race, meanwhile,
    // or a crash a hang, spin or slow is under.
    if (triage.cause.empty() && keptUnderCrash(seq, seqSeed, t, ranBefore)) return true;
    if (!triage.cause.empty() && !triage.variant && knownHit(triage.cause, t.outcome.op)) {
      settlePoisoned(claims, t.outcome, triage.cause);
      return true;
    }
    if (triage.cause.empty() && !plantedRaceHit(seq, t).empty()) return true;
    const TrialResult& first = t;
    {
      std::lock_guard lock(mutex_);
      shrinking_ = (unshrunk ? "confirming " : "shrinking ") + shown;
      examinedAs_.insert(as);
    }
    Shrinker shrinker(trials_, freshJobs());
    // Whether the turn, not the shrink window, ended the shrink: its note says which.
    bool turnEnded = false;
    if (auto over = turnOver(as)) {
      shrinker.endTurnWhen(
          [&turnEnded, over = std::move(over)] { return turnEnded = turnEnded || over(); });
    }
    MinimizeRequest request{
        seq, first, seqSeed, foundText(seqSeed, ranBefore), confirmations_, !triage.variant};
    Finding f = unshrunk ? confirmedUnshrunk(shrinker, trials_, request)
                         : minimizeFailure(shrinker, trials_, request, {},
                                           [this](const Finding& candidate) {
                                             return store_.knows(candidate.signature());
                                           });
    if (unshrunk) {
      f.minimal.directives.notes.push_back(
          "not shrunk: met once the shrink window had closed; its cause is its run's");
    }
    // A crash under the same runtime entry point may have been recorded during the shrink.
    const std::string under = stuckUnderCrash(f.outcome, f.stacks);
    if (!under.empty()) markUnderCrash(f, under);
    f.executionsToFind = trials_.executions();
    f.minimal.directives.notes.push_back("found on " + plan_.deviceDescription);
    if (stopRequested()) {
      // Nothing found is lost: a shrink cut short keeps its best sequence so far, marked so.
      f.minimal.directives.notes.push_back(
          plan_.stopRequested && plan_.stopRequested()
              ? "shrink interrupted by a stop: may not be minimal"
              : "shrink cut short when --time and --grace were spent: may not be minimal");
    } else if (f.confirmations > 0 && f.reproduced == 0) {
      ++unconfirmed_;  // never reproduced: a timing accident, not a finding
      std::lock_guard lock(mutex_);
      shrinking_.clear();
      return false;
    } else if (f.shrinkCutShort && turnEnded) {
      f.minimal.directives.notes.push_back(
          "shrink cut short to give the failures queued behind it their turn: may not be minimal");
    } else if (f.shrinkCutShort) {
      f.minimal.directives.notes.push_back(
          "shrink cut short to leave the last fifth of --grace to its confirmations: may not be "
          "minimal");
    }
    if (f.reproduced > 0) trials_.markConfirmedKind(f.outcome);
    const bool knewSignature = store_.knows(f.signature());
    const auto [isNew, dir] = store_.record(f);
    settleDeferred(causeKey(f));
    if (!f.stopped && f.reproduced > 0) settlePoisoned(claims, f.outcome, causeKey(f));
    std::lock_guard lock(mutex_);
    variantOps_[causeKey(f)].insert(under.empty() ? f.outcome.op : stuckVariantOp(f.outcome));
    if (f.stopped && under.empty()) ++unexamined_[static_cast<std::size_t>(f.outcome.cls)];
    shrinking_.clear();
    if (!isNew) {
      if (!knewSignature) ++variants_;
      ++kindRepeats_[kind];
      return true;
    }
    if (!f.stopped && (f.reproduced > 0 || f.confirmations == 0)) ++confirmed_;
    kindRepeats_[kind] = 0;
    lastFind_ = Clock::now();
    lastFindUnix_ = unixNow();
    findings_.push_back({f, (dir / "minimal.seq").string()});
    printFinding(f, dir);
    if (report_) writeReport(*report_, reportUnlocked());
    // Explained once its worker no longer examines (explainPending): an explanation can hold
    // the examiner for minutes, and the failures queued behind it would end unexamined.
    if (explain_) toExplain_.emplace_back(f, dir);
    return true;
  }

  /// Explains the findings recorded and not yet explained, one after another, unless a stop
  /// came. A worker calls it when it holds neither the shrink nor the examiner's place, so
  /// another worker examines the failures met meanwhile. One worker explains at a time.
  void explainPending() {
    {
      std::lock_guard lock(mutex_);
      if (explainerActive_) return;  // the worker explaining now takes these too
      explainerActive_ = true;
    }
    for (;;) {
      std::optional<std::pair<Finding, std::filesystem::path>> next;
      {
        std::lock_guard lock(mutex_);
        if (toExplain_.empty() || stopRequested()) {
          explainerActive_ = false;
          return;
        }
        next = std::move(toExplain_.front());
        toExplain_.pop_front();
        explaining_ = "explaining " + std::string(outcomeClassName(next->first.outcome.cls)) + "/" +
                      next->first.outcome.op;
      }
      explainInto(next->first, next->second);
      std::lock_guard lock(mutex_);
      explaining_.clear();
    }
  }

  /// What the status shows the examiner and the explainer doing (mutex_ held).
  std::string activityLocked() const {
    if (shrinking_.empty() || explaining_.empty()) return shrinking_ + explaining_;
    return shrinking_ + ", " + explaining_;
  }

  Report reportUnlocked() const;

  /// When the shrink of `cause` (a settled cause, or a failure kind) gives way to the causes
  /// queued behind it. With --persistent and --time, its turn is its share of the shrink window
  /// left as it began, split evenly with each distinct cause waiting in the queue; the share
  /// shrinks as more arrive, so that one slow shrink cannot take a night's whole window from
  /// the causes queued behind it (bench/RESULTS.md). Nothing waiting, no limit: a shrink alone
  /// keeps the whole window.
  std::function<bool()> turnOver(const std::string& cause) {
    if (plan_.persistent <= 1 || !deadline_) return {};
    const Clock::time_point began = Clock::now();
    const Clock::time_point windowEnd = shrinkWindowEnd();
    if (began >= windowEnd) return {};
    return [this, cause, began, windowEnd] {
      const std::size_t waiting = causesQueued(cause);
      return waiting > 0 && Clock::now() >= turnEnd(began, windowEnd, waiting);
    };
  }

  /// The distinct causes in the queue other than `shrinking`: a settled cause, or for a failure
  /// triage could not settle, its kind. A variant, or a failure whose cause was recorded since
  /// it was queued, waits for no verdict: its cause is known.
  std::size_t causesQueued(const std::string& shrinking) const {
    std::lock_guard lock(mutex_);
    if (queued_.empty()) return 0;
    const auto known = store_.causes();
    std::set<std::string> causes;
    for (const Queued& q : queued_) {
      if (q.triage.variant || known.contains(q.triage.cause)) continue;
      causes.insert(examinedAs(q.triage, q.t.outcome));
    }
    causes.erase(shrinking);
    return causes.size();
  }

  /// Where the shrink window of a campaign with --time closes (TrialRunner::shrinkUntil): the
  /// grace's last fifth is left to confirmations.
  Clock::time_point shrinkWindowEnd() const {
    return *deadline_ + plan_.grace - plan_.grace / kConfirmingShareOfGrace;
  }

  unsigned freshJobs() const {
    const unsigned jobs = std::max(plan_.jobs, 1U);
    return plan_.freshJobs == 0 ? jobs : std::min(plan_.freshJobs, jobs);
  }

  /// The cause a failure's first run settles (Cause.h), before any shrink; empty when the cause
  /// needs the minimal sequence (a leak, a wrong image, a hang nothing planted):
  /// - a crash: its frames, from the failing run's own (the runner's crash handler) or, for a
  ///   target, from a fresh run under a debugger; none without frames;
  /// - a failure a fault-plan rule planted: its rule;
  /// - an error or a checker's report: its verdict at its kind of operation.
  /// Only a sequence on one thread: a threaded one's cause says whether its minimal sequence
  /// still needs threads, which only its shrink tells. `freshFrames`: whether a target's crash
  /// without frames may be run again for them.
  std::string settledCause(const Sequence& seq, const TrialResult& t, bool freshFrames = true) {
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

  /// The `found` directive of a failure of sequence `seqSeed`.
  std::string foundText(uint64_t seqSeed, std::size_t ranBefore) const {
    std::optional<uint64_t> parent;
    {
      std::lock_guard lock(mutex_);
      if (const auto it = mutantOf_.find(seqSeed); it != mutantOf_.end()) parent = it->second;
    }
    // A mutant's seed does not generate it: what it was made from says where it came from.
    if (parent) {
      return "gpufuzz fuzz --seed " + std::to_string(seed_) + " --search guided (a mutant of " +
             "queue/" + SearchQueue::fileName(*parent) + ", drawn from seed " +
             std::to_string(seqSeed) + ")";
    }
    return "gpufuzz fuzz --seed " + std::to_string(seed_) + " (sequence seed " +
           std::to_string(seqSeed) +
           (ranBefore ? ", after the " + std::to_string(ranBefore) +
                            " sequence(s) its persistent process ran before it"
                      : std::string()) +
           ")";
  }

  /// A hang, a spin, or a slow operation no plan's rule planted: a failure whose stacks show
  /// where the runtime's own thread waited.
  static bool unplantedStuckOrLate(const RunOutcome& o) {
    return (o.cls == OutcomeClass::Hang || o.cls == OutcomeClass::Spin ||
            o.cls == OutcomeClass::Slow) &&
           o.fault.empty();
  }

  /// The known crash cause an unplanted hang, spin or slow is stuck under: its thread waits in
  /// the runtime entry point (runtimeEntry) that cause died under. A runtime that crashes in a
  /// call may spin in the same call when its state is broken otherwise, for ever or for a while:
  /// one fault, three faces: a slow ctx_destroy may wait on the lock that a spin under
  /// cuMemPoolDestroy holds. Empty when it is not, or has no stacks.
  std::string stuckUnderCrash(const RunOutcome& o, const std::string& stacks) const {
    if (!unplantedStuckOrLate(o) || stacks.empty() || isCrashText(stacks)) {
      return {};
    }
    return store_.crashCauseUnder(runtimeEntry(stacks));
  }

  /// What variantOps_ keeps for a stuck failure under a crash's cause: its class and operation,
  /// never equal to an operation's name, so a crash at that operation is still a new variant.
  static std::string stuckVariantOp(const RunOutcome& o) {
    return std::string(outcomeClassName(o.cls)) + " at " + o.op;
  }

  /// Makes stuck finding `f` a variant of crash cause `cause`, saying why in its file.
  static void markUnderCrash(Finding& f, const std::string& cause) {
    f.cause = cause;
    const bool late = f.outcome.cls == OutcomeClass::Slow;
    f.minimal.directives.notes.push_back((late ? "late in " : "stuck in ") +
                                         runtimeEntry(f.stacks) +
                                         ", the runtime's call its cause's crash died in: a "
                                         "variant of that cause");
    // A variant keeps no stacks file: its thread's top frames go in its note.
    std::string frames;
    for (const std::string& name : topFrames(f.stacks, kStuckFramesNoted))
      frames += (frames.empty() ? "" : " < ") + name;
    f.minimal.directives.notes.push_back((late ? "its late thread: " : "its stuck thread: ") +
                                         frames);
  }
  static constexpr std::size_t kStuckFramesNoted = 6;

  /// `t`, or for an unplanted hang, spin or slow without stacks while a known crash has a runtime
  /// entry point, a run of `seq` that took them and failed the same way. A miss of a kind
  /// already confirmed skips its confirmation, and with it the stacks; one run costs less than
  /// the shrink the failure needs otherwise.
  TrialResult withStuckStacks(const Sequence& seq, const TrialResult& t) {
    const RunOutcome& o = t.outcome;
    if (!unplantedStuckOrLate(o) || !t.evidence.stacks.empty() || !trials_.setup().captureStacks ||
        !store_.hasCrashEntries()) {
      return t;
    }
    TrialResult again = trials_.run(seq, TrialMode::Evidence, std::nullopt, t.attempt);
    const bool same = !again.harnessError && again.outcome.cls == o.cls && again.outcome.op == o.op;
    return same ? again : t;
  }

  /// A hang, spin or slow under a known crash's runtime entry point (stuckUnderCrash) is that
  /// crash's: its first at each class and operation is kept, not shrunk, as a variant of the
  /// crash's cause, with its stacks' note; later ones are hits. Whether it was.
  bool keptUnderCrash(const Sequence& seq, uint64_t seqSeed, const TrialResult& t,
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
        trials_, MinimizeRequest{seq, framed, seqSeed, foundText(seqSeed, ranBefore), 0, false});
    markUnderCrash(f, cause);
    f.minimal.directives.notes.push_back("not shrunk: its cause's crash was shrunk");
    f.minimal.directives.notes.push_back("found on " + plan_.deviceDescription);
    const bool knew = store_.knows(f.signature());
    store_.record(f);
    std::lock_guard lock(mutex_);
    ++(knew ? triageHits_ : variants_);
    return true;
  }

  /// Whether `cause` is known and `op` is one of its variants' operations: then the failure is
  /// counted as a hit of it (FindingStore::countHit).
  bool knownHit(const std::string& cause, const std::string& op) {
    {
      std::lock_guard lock(mutex_);
      const auto it = variantOps_.find(cause);
      if (it == variantOps_.end() || !it->second.contains(op)) return false;
    }
    countTriageHit(cause);
    return true;
  }

  /// One failure counted as a hit of known `cause` by triage: in the tally and on disk.
  void countTriageHit(const std::string& cause) {
    {
      std::lock_guard lock(mutex_);
      ++triageHits_;
    }
    store_.countHit(cause);
  }

  /// A threaded failure a rule planted is that rule's bug, whether or not its minimal sequence
  /// keeps its threads: once either form is known at its operation, it is a hit, counted, and
  /// its cause is returned; else empty. Before, each repeat of a planted race was shrunk at up
  /// to 64 tries a candidate.
  std::string plantedRaceHit(const Sequence& seq, const TrialResult& t) {
    if (seq.threadCount() <= 1 || t.outcome.fault.empty()) return {};
    const Sequence oneThread;  // a planted cause reads only the thread count
    for (const Sequence* form : {&seq, &oneThread}) {
      std::string cause = failureCause(t.outcome, *form, trials_.setup().policy, {});
      if (knownHit(cause, t.outcome.op)) return cause;
    }
    return {};
  }

  Triage triaged(const Sequence& seq, const TrialResult& t) {
    Triage triage;
    triage.cause = settledCause(seq, t);
    if (triage.cause.empty()) {
      triage.cause = plantedRaceHit(seq, t);
      triage.hit = !triage.cause.empty();
      return triage;
    }
    if (knownHit(triage.cause, t.outcome.op)) {
      triage.hit = true;
      return triage;
    }
    std::lock_guard lock(mutex_);
    const auto known = store_.causes();
    if (known.contains(triage.cause)) {
      // The cause at an operation new to it: shrunk once, as a variant; its later hits are free.
      triage.variant = variantOps_[triage.cause].insert(t.outcome.op).second;
      if (!triage.variant) {
        ++triageHits_;
        triage.hit = true;
      }
    } else {
      triage.newSite = true;
    }
    if (triage.hit) store_.countHit(triage.cause);
    return triage;
  }

  /// A persistent process's failure that is a known cause's hit, counted without re-running it
  /// in a fresh process: one whose run settles a known cause (settledCause: a crash's frames, a
  /// planted rule, an error's verdict), or a hang or spin of a kind confirmed already. The
  /// process may have been poisoned by a sequence it ran before, which is what the re-runs with
  /// its history would look for, at the cost of long runs.
  bool persistentHit(const Sequence& seq, const TrialResult& t, bool wait = true) {
    // Stuck under a known crash's runtime entry point, at a class and operation kept as its
    // variant already: a hit of that crash (keptUnderCrash keeps the first, from a fresh run).
    if (const std::string crash = stuckUnderCrash(t.outcome, t.evidence.stacks); !crash.empty())
      return knownHit(crash, stuckVariantOp(t.outcome));
    if (t.evidence.stuck && trials_.isConfirmedKind(t.outcome)) {
      trials_.countSkippedConfirmation();
      std::lock_guard lock(mutex_);
      ++triageHits_;
      return true;
    }
    const std::string cause = settledCause(seq, t, /*freshFrames=*/false);
    if (cause.empty()) return false;
    std::string as;  // the known cause it counts as
    {
      std::lock_guard lock(mutex_);
      const auto self = std::this_thread::get_id();
      as = knownAsLocked(cause);
      if (as.empty()) {
        if (!wait) return false;
        // Another worker examining this cause (re-runs, shrinks) takes the failure too: not
        // examined twice. This worker goes on fuzzing: waiting would hold every worker while
        // one examines.
        if (!claims_.claimOrDefer(cause, self, t.outcome.cls)) return true;
        if (t.outcome.cls == OutcomeClass::Crash && t.outcome.fault.empty())
          crashSites_.insert(cause);
        return false;
      }
      ++triageHits_;
    }
    store_.countHit(as);
    return true;
  }

  /// The known cause a persistent failure of `cause` counts as (mutex_ held): `cause` itself
  /// once recorded, else the cause that poisoned processes failing so (poisonedBy_), else empty.
  std::string knownAsLocked(const std::string& cause) const {
    const auto known = store_.causes();
    if (known.contains(cause)) return cause;
    const auto by = poisonedBy_.find(cause);
    return by != poisonedBy_.end() && known.contains(by->second) ? by->second : std::string();
  }

  /// knownAsLocked as a function, for Claims (mutex_ held while it is called).
  KnownAs knownAsLocked() const {
    return [this](const std::string& cause) { return knownAsLocked(cause); };
  }

  /// A persistent failure whose own run settled `claims` (persistentHit) failed in its fresh
  /// re-runs as `fresh` instead, of known `cause` now: a hit of it, or a finding just recorded.
  /// Its process was poisoned by that. Persistent failures of those causes, deferred now or met
  /// later, count as hits of `cause`; otherwise crashes deferred that way end unexamined.
  /// Only a crash site, by its frames, counts so, and only as an unplanted crash:
  /// a planted rule names its own bug, and a crash's frames may be a poisoned process's symptom.
  void settlePoisoned(const std::vector<std::string>& claims, const RunOutcome& fresh,
                      const std::string& cause) {
    if (claims.empty() || cause.empty() || fresh.cls != OutcomeClass::Crash ||
        !fresh.fault.empty()) {
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

  /// The causes the calling worker claimed (persistentHit) for the failure it examines now.
  std::vector<std::string> ownClaims() const {
    std::lock_guard lock(mutex_);
    return claims_.heldBy(std::this_thread::get_id());
  }

  /// The failures deferred to `cause`'s verdict (persistentHit) become its hits, now that it is
  /// recorded: the tally shows them at once, not when the examining worker's sequence ends.
  void settleDeferred(const std::string& cause) {
    uint64_t n = 0;
    {
      std::lock_guard lock(mutex_);
      n = takeDeferredLocked(cause);
    }
    if (n > 0) store_.countHit(cause, n);
  }

  /// Takes the failures deferred to `cause`, now known, as its hits (mutex_ held): counted in
  /// the tally, and returned for the store's counter.
  uint64_t takeDeferredLocked(const std::string& cause) {
    const uint64_t n = total(claims_.take(cause));
    triageHits_ += n;
    return n;
  }

  /// Ends the calling worker's claims on causes (persistentHit), once its sequence is done.
  void endExamining() {
    endClaims([self = std::this_thread::get_id()](const std::string&, std::thread::id owner) {
      return owner == self;
    });
  }

  /// Ends the claims on causes that `ends(cause, owner)` picks. The failures still deferred to
  /// such a claim's verdict become hits of a known cause. Those of a cause still unknown wait on,
  /// unclaimed: the next failure of it that a worker meets claims it, and its verdict settles
  /// them (settleDeferred). Before, they were unexamined at once. A claim's failure may re-run as
  /// another cause: cuMemPoolCreate fails at `create` and at `ctx_create` alike.
  void endClaims(const std::function<bool(const std::string&, std::thread::id)>& ends) {
    std::vector<DeferredHits> hits;
    {
      std::lock_guard lock(mutex_);
      hits = claims_.end(ends, knownAsLocked());
      countTriageHitsLocked(hits);
    }
    countHits(hits);
    turn_.notify_all();
  }

  /// Once every worker is done: the failures still deferred, their causes unclaimed, become
  /// hits of a cause known by now, or unexamined.
  void settleLeftDeferred() {
    std::vector<DeferredHits> hits;
    {
      std::lock_guard lock(mutex_);
      LeftDeferred left = claims_.takeLeft(knownAsLocked());
      for (std::size_t c = 0; c < left.unexamined.size(); ++c)
        unexamined_[c] += left.unexamined[c];
      hits = std::move(left.hits);
      countTriageHitsLocked(hits);
    }
    countHits(hits);
  }

  void countTriageHitsLocked(const std::vector<DeferredHits>& hits) {
    for (const DeferredHits& h : hits)
      triageHits_ += h.hits;
  }

  void countHits(const std::vector<DeferredHits>& hits) {
    for (const DeferredHits& h : hits)
      store_.countHit(h.as, h.hits);
  }

  /// A failure that waits for the shrink: a new crash site goes before the others (waitTurn
  /// holds them while one waits); endTurn once it holds the shrink.
  void waitTurn(bool newSite) {
    std::unique_lock lock(mutex_);
    if (newSite) {
      ++newSitesWaiting_;
      return;
    }
    while (newSitesWaiting_ > 0 && !stopRequested())
      turn_.wait_for(lock, std::chrono::milliseconds(50));
  }
  void endTurn(bool newSite) {
    if (!newSite) return;
    {
      std::lock_guard lock(mutex_);
      --newSitesWaiting_;
    }
    turn_.notify_all();
  }

  /// A failure whose examination no longer starts (a stop, the shrink window closed) is still a
  /// hit when its cause is known by now: a variant's, one recorded since it was queued, or the
  /// cause that poisoned its process. Its frames, rule or verdict settled that cause, so it is
  /// counted so, not unexamined, though its cause was recorded while it waited. Whether it was
  /// one.
  bool knownCauseHit(const Triage& triage) {
    if (triage.cause.empty()) return false;
    std::string as;
    {
      std::lock_guard lock(mutex_);
      as = knownAsLocked(triage.cause);
      if (as.empty()) return false;
      ++triageHits_;
    }
    store_.countHit(as);
    return true;
  }

  void countUnexamined(OutcomeClass cls) {
    std::lock_guard lock(mutex_);
    ++unexamined_[static_cast<std::size_t>(cls)];
  }

  /// The tally (mutex_ held): "1 cause confirmed (2 variants, 40 hits); unexamined 3: crash 2,
  /// spin 1".
  std::string tallyText() const {
    std::string text = std::to_string(confirmed_) + " cause(s) confirmed (" +
                       std::to_string(variants_) + " variant(s), " + std::to_string(triageHits_) +
                       " hit(s) by triage)";
    std::string classes;
    for (std::size_t c = 0; c < unexamined_.size(); ++c) {
      if (unexamined_[c] == 0) continue;
      classes += (classes.empty() ? ": " : ", ") +
                 std::string(outcomeClassName(static_cast<OutcomeClass>(c))) + " " +
                 std::to_string(unexamined_[c]);
    }
    // Failures queued for the examiner or deferred to another's verdict have none yet: the
    // status says so: "unexamined 0" alone would hide a failure queued for minutes.
    const uint64_t waiting = queued_.size() + claims_.waiting();
    return text + "; unexamined " + std::to_string(total(unexamined_)) + classes +
           (waiting > 0 ? ", waiting " + std::to_string(waiting) : std::string());
  }

  /// An overnight run leaves explained findings: explanation.md beside each new minimal.seq.
  void explainInto(const Finding& f, const std::filesystem::path& dir) {
    ExplainOptions options;
    options.shrink = false;  // already 1-minimal
    options.knownReproduction = std::pair{f.reproduced, f.confirmations};
    options.candidateLimit = candidateStuckLimit(f);
    try {
      const Explanation e = explainFailure(trials_, freshJobs(), f.minimal, f.outcome, options);
      if (stopRequested()) return;  // its trials were cut short: no explanation
      writeFileAtomically(dir / "explanation.md", explanationMarkdown(e));
    } catch (const WriteError&) {
      throw;  // the disk, not the explanation: the campaign stops
    } catch (const std::exception& error) {
      say(stderr, "gpufuzz: could not explain %s: %s\n", dir.c_str(), error.what());
    }
  }

  void printFinding(const Finding& f, const std::filesystem::path& dir) {
    const std::string file = (dir / "minimal.seq").string();
    say(stdout,
        "\nFOUND %s at %s (%s): %s\n%s%s  %s; %llu executions to find, %llu to "
        "shrink\n  saved to %s\n  replay: gpufuzz replay %s\n",
        std::string(outcomeClassName(f.outcome.cls)).c_str(),
        f.outcome.at ? atText(*f.outcome.at).c_str() : "-", f.outcome.op.c_str(),
        f.outcome.detail.c_str(), indented(normalizedOperations(f.minimal)).c_str(),
        f.outcome.fault.empty() ? "" : ("  planted by " + f.outcome.fault + "\n").c_str(),
        f.reproductionText().c_str(), static_cast<unsigned long long>(f.executionsToFind),
        static_cast<unsigned long long>(f.executionsToShrink), file.c_str(), file.c_str());
  }

  static std::string indented(const std::string& text) {
    std::string out;
    std::size_t start = 0;
    while (start < text.size()) {
      const auto end = text.find('\n', start);
      out += "    " + text.substr(start, end - start) + "\n";
      if (end == std::string::npos) break;
      start = end + 1;
    }
    return out;
  }

  void writeStatsFile(bool finished) {
    if (statsFile_.empty()) return;
    try {
      writeStats(statsFile_, stats(finished));
    } catch (const WriteError& error) {
      writeFailed(error);
    } catch (const std::exception& error) {
      if (!statsFailed_.exchange(true))
        say(stderr, "gpufuzz: cannot write the stats: %s\n", error.what());
    }
  }

  /// A line of plot_data: the stats now, at the rate since the line before.
  void appendPlotLine(bool finished) {
    if (statsFile_.empty()) return;
    const auto now = Clock::now();
    const uint64_t executions = trials_.executions();
    const double seconds = std::chrono::duration<double>(now - lastPlot_.first).count();
    const double rate =
        seconds > 0 ? static_cast<double>(executions - lastPlot_.second) / seconds : 0.0;
    lastPlot_ = {now, executions};
    try {
      appendPlotData(statsFile_.parent_path() / kPlotDataFile, stats(finished), rate);
    } catch (const WriteError& error) {
      writeFailed(error);
    } catch (const std::exception& error) {
      if (!statsFailed_.exchange(true))
        say(stderr, "gpufuzz: cannot write the plot data: %s\n", error.what());
    }
  }

  /// plan_.periodic every plan_.periodicEvery until the campaign ends.
  void periodicLoop(std::stop_token stop) {
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    for (;;) {
      wake.wait_for(lock, stop, plan_.periodicEvery, [] { return false; });
      if (stop.stop_requested()) return;
      try {
        plan_.periodic();
      } catch (...) {
        // The hook's failure is the hook's to report: the campaign goes on.
      }
    }
  }

  void statusLoop(std::stop_token stop) {
    // Once a second: the stats file, and the status (a block refreshed in place on a terminal,
    // a log line otherwise); once a minute a line of plot_data. The wait ends at the stop, so a
    // campaign's end does not wait out the second: its elapsed time would count that wait.
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock waitLock(mutex);
    auto last = Clock::now();
    for (;;) {
      wake.wait_until(waitLock, stop, last + std::chrono::seconds(1), [] { return false; });
      if (stop.stop_requested()) break;
      last = Clock::now();
      writeStatsFile(false);
      if (last - lastPlot_.first >= std::chrono::minutes(1)) appendPlotLine(false);
      if (plan_.quiet) continue;
      // The status is read (mutex_) before the output is taken (outputMutex_): a worker prints
      // a finding holding mutex_, so the other order deadlocked a campaign (pocl 6.0, 2026-12-04).
      const std::vector<std::string> block =
          tty_ ? statusBlock() : std::vector<std::string>{statusLine()};
      std::lock_guard lock(outputMutex_);
      if (!tty_) {
        std::fprintf(stderr, "%s\n", block.front().c_str());
        continue;
      }
      clearStatusBlock();
      for (const std::string& line : block)
        std::fprintf(stderr, "%s\033[K\n", line.c_str());
      blockLines_ = block.size();
    }
    std::lock_guard lock(outputMutex_);
    clearStatusBlock();
  }

  /// Erases the status block from the terminal (outputMutex_ held): other output goes where it
  /// stood, and the next tick draws the block below it.
  void clearStatusBlock() {
    if (blockLines_ == 0) return;
    std::fprintf(stderr, "\033[%zuA\r\033[J", blockLines_);
    blockLines_ = 0;
  }

  /// Prints a message between status refreshes.
  template <typename... Args>
  void say(std::FILE* stream, const char* format, Args... args) {
    std::lock_guard lock(outputMutex_);
    clearStatusBlock();
    std::fprintf(stream, format, args...);
    std::fflush(stream);
  }

 public:
  void setReport(std::optional<std::string> path) { report_ = std::move(path); }
  /// Starts the shard's stream at its k-th sequence instead of the first, after the sequences
  /// an earlier campaign left unfinished (before run()).
  void startAt(uint64_t k, const std::vector<uint64_t>& unfinished) {
    next_ = k;
    startedUpTo_ = k;
    redo_.insert(unfinished.begin(), unfinished.end());
  }
  /// The stream's earlier campaigns in this folder got to its k-th sequence: the stats keep
  /// that as the place to go on from even when this run covers less of it.
  /// The sequences they left unfinished stay so until this run completes them.
  void keepFrontier(uint64_t k, const std::vector<uint64_t>& unfinished) {
    frontier_ = k;
    unfinished_.insert(unfinished.begin(), unfinished.end());
  }
  void setConfirmations(uint32_t n) { confirmations_ = n; }
  void setExplain(bool explain) { explain_ = explain; }
  /// Where the stats go, what they say of this campaign, and the folder's earlier stats.
  void setStats(std::filesystem::path file, CampaignStats identity,
                std::optional<CampaignStats> previous) {
    statsFile_ = std::move(file);
    statsIdentity_ = std::move(identity);
    previous_ = std::move(previous);
  }

 private:
  /// A stop request, or the time and grace spent.
  bool stopRequested() const {
    return (plan_.stopRequested && plan_.stopRequested()) || trials_.stopRequested();
  }

  const CampaignPlan& plan_;
  TrialRunner& trials_;
  FindingStore& store_;
  GeneratorConfig gen_;
  uint64_t seed_;
  Shard shard_;
  SequenceSource source_;
  uint32_t confirmations_ = 5;
  bool explain_ = true;
  std::optional<std::string> report_;
  std::optional<uint64_t> runs_;
  const bool tty_ = ::isatty(STDERR_FILENO) != 0;
  // Status block and messages. Taken after mutex_ where both are held, never before it.
  std::mutex outputMutex_;
  std::size_t blockLines_ = 0;
  std::optional<Clock::time_point> deadline_;
  const Clock::time_point started_ = Clock::now();
  std::pair<Clock::time_point, uint64_t> lastPlot_{started_, trials_.executions()};
  const std::pair<uint64_t, uint64_t> confirmationsBefore_{trials_.longConfirmations(),
                                                           trials_.confirmationsSkipped()};
  const int64_t startedUnix_ = unixNow();
  std::filesystem::path statsFile_;
  CampaignStats statsIdentity_;
  std::optional<CampaignStats> previous_;
  std::atomic<bool> statsFailed_{false};
  // Sequences are shard counters; next_, redo_, unfinished_ and startedUpTo_ under mutex_.
  uint64_t next_ = 0;
  std::set<uint64_t> redo_;        // left unfinished by an earlier campaign, not begun yet
  std::set<uint64_t> unfinished_;  // begun and not done, and redo_
  uint64_t startedUpTo_ = 0;
  uint64_t frontier_ = 0;
  std::atomic<uint64_t> sequences_{0};
  std::atomic<uint64_t> mutantRuns_{0};    // guided search's mutants run (kMutant)
  std::map<uint64_t, uint64_t> mutantOf_;  // mutex_: a failing mutant's seed -> its parent
  std::atomic<uint64_t> harnessErrors_{0};
  std::atomic<bool> broken_{false};
  std::string unsupported_;  // mutex_
  std::atomic<uint64_t> failures_{0};
  std::atomic<uint64_t> failuresCutShort_{0};  // failures of sequences a stop cut short
  std::string stopReason_;                     // why the run was stopped; empty when it was not
  std::string writeFailure_;                   // mutex_: the write that stopped it, if one did
  std::atomic<bool> writeFailed_{false};
  std::atomic<uint64_t> unconfirmed_{0};
  std::atomic<uint64_t> persistentFailures_{0}, persistentSame_{0}, persistentNeededHistory_{0};
  std::array<std::atomic<uint64_t>, kOutcomeClassCount> byClass_{};
  mutable std::mutex mutex_;
  std::mutex shrinkMutex_;
  std::map<std::string, uint64_t> kindHits_;
  std::map<std::string, uint32_t> kindRepeats_;
  // Each kind whose first miss a worker is confirming and shrinking, and that worker (mutex_).
  std::map<std::string, std::thread::id> confirming_;
  std::condition_variable verdict_;
  std::vector<ReportedFinding> findings_;
  // The tally (mutex_): causes this run confirmed, variants recorded, hits triage counted
  // without a shrink, failures not examined by a finished shrink (by class).
  uint64_t confirmed_ = 0, variants_ = 0, triageHits_ = 0, queuedFailures_ = 0;
  ClassCounts unexamined_{};
  /// Each cause's operations that have a minimal sequence (its own or a variant's).
  std::map<std::string, std::set<std::string>> variantOps_;
  unsigned newSitesWaiting_ = 0;  // mutex_
  /// Causes a worker re-runs or shrinks now, and the failures deferred to their verdicts (mutex_).
  Claims claims_;
  /// The owner of a claim whose failure waits in queued_: no thread's.
  static inline const std::thread::id kQueuedClaim{};
  /// With --persistent: whether a worker examines failures now, and those queued for it.
  bool examinerActive_ = false;       // mutex_
  std::deque<Queued> queued_;         // mutex_
  std::set<std::string> examinedAs_;  // mutex_: the causes and kinds a shrink examined
  std::condition_variable turn_;
  std::optional<Clock::time_point> lastFind_;
  std::optional<int64_t> lastFindUnix_;
  std::string shrinking_;
  /// Findings recorded and not yet explained, oldest first, and the one explained now (mutex_).
  std::deque<std::pair<Finding, std::filesystem::path>> toExplain_;
  std::string explaining_;
  bool explainerActive_ = false;
  /// Causes of persistent crashes whose fresh re-runs, with the process's history, failed as
  /// another cause: the process was poisoned by that one, whose hits they count as (mutex_).
  std::map<std::string, std::string> poisonedBy_;
  /// Claimed causes that are unplanted crashes' frames (mutex_).
  std::set<std::string> crashSites_;
};

Report Campaign::reportUnlocked() const {
  Report r;
  r.command = "fuzz";
  r.seed = seed_;
  r.describeRun(trials_.setup());
  r.extra.emplace_back("device", jsonString(plan_.deviceDescription));
  r.executions = trials_.executions();
  r.elapsedSeconds = secondsSince(started_);
  r.findings = findings_;
  return r;
}

Campaign::Status Campaign::status() const {
  std::lock_guard lock(mutex_);
  Status st;
  st.elapsed = secondsSince(started_);
  st.executions = trials_.executions();
  st.rate = st.elapsed > 0 ? static_cast<double>(st.executions) / st.elapsed : 0.0;
  st.sequences = sequences_.load();
  for (std::size_t c = 0; c < byClass_.size(); ++c) {
    if (byClass_[c] == 0) continue;
    st.classes += " " + std::string(outcomeClassName(static_cast<OutcomeClass>(c))) + "=" +
                  std::to_string(byClass_[c].load());
  }
  st.unique = confirmed_;
  st.tally = tallyText();
  st.lastFind = lastFind_
                    ? std::to_string(static_cast<long long>(secondsSince(*lastFind_))) + "s ago"
                    : "never";
  st.deadline = trials_.deadlines().describe();
  st.shrinking = activityLocked();
  st.calls = callsText(trials_.calls());
  st.search = "signals " + std::to_string(source_.signals());
  if (source_.guided()) {
    st.search += ", queue " + std::to_string(source_.queued()) + ", mutants " +
                 std::to_string(mutantRuns_.load());
  }
  if (plan_.persistent > 1) {
    const uint64_t failures = persistentFailures_.load();
    char text[160];
    std::snprintf(
        text, sizeof text,
        "persistent %u: stability %s (%llu of %llu failures the same alone), %llu "
        "needed the sequences before them",
        plan_.persistent,
        failures ? (std::to_string(100 * persistentSame_.load() / failures) + "%").c_str() : "100%",
        static_cast<unsigned long long>(persistentSame_.load()),
        static_cast<unsigned long long>(failures),
        static_cast<unsigned long long>(persistentNeededHistory_.load()));
    st.persistent = text;
  }
  return st;
}

std::string Campaign::statusLine() const {
  const Status st = status();
  char line[768];
  // The runtime calls come last: readers of the line match its older fields in place.
  std::snprintf(line, sizeof line,
                "[%6.0fs] %llu execs (%.1f/s), %llu sequences:%s | %s | last find %s | "
                "deadline %s%s%s%s%s%s%s%s%s",
                st.elapsed, static_cast<unsigned long long>(st.executions), st.rate,
                static_cast<unsigned long long>(st.sequences), st.classes.c_str(), st.tally.c_str(),
                st.lastFind.c_str(), st.deadline.c_str(), st.persistent.empty() ? "" : " | ",
                st.persistent.c_str(), st.shrinking.empty() ? "" : " | ", st.shrinking.c_str(),
                st.calls.empty() ? "" : " | ", st.calls.c_str(), st.search.empty() ? "" : " | ",
                st.search.c_str());
  return line;
}

std::vector<std::string> Campaign::statusBlock() const {
  const Status st = status();
  const auto total = static_cast<long long>(st.elapsed);
  char elapsed[64], executions[96];
  std::snprintf(elapsed, sizeof elapsed, "%lldh %02lldm %02llds", total / 3600, total / 60 % 60,
                total % 60);
  std::snprintf(executions, sizeof executions, "%llu (%.1f/s)",
                static_cast<unsigned long long>(st.executions), st.rate);
  std::vector<std::string> block{
      std::string("  elapsed     ") + elapsed,
      std::string("  executions  ") + executions + (st.calls.empty() ? "" : ", " + st.calls),
      "  sequences   " + std::to_string(st.sequences) + (st.classes.empty() ? "" : ":") +
          st.classes,
      "  findings    " + st.tally + ", last find " + st.lastFind +
          (st.search.empty() ? "" : "; " + st.search),
      "  deadline    " + st.deadline,
      "  now         " + (st.shrinking.empty() ? std::string("fuzzing") : st.shrinking),
  };
  if (!st.persistent.empty()) block.insert(block.end() - 1, "  processes   " + st.persistent);
  return block;
}

}  // namespace

CampaignResult runCampaign(const CampaignPlan& plan, TrialRunner& trials, FindingStore& store) {
  Campaign campaign(plan, trials, store);
  campaign.setReport(plan.reportFile);
  campaign.setConfirmations(plan.confirmations);
  campaign.setExplain(plan.explain);
  const CampaignStats& identity = plan.identity;
  const std::optional<CampaignStats>& previous = plan.previous;
  const std::optional<uint64_t>& runs = plan.runs;
  const uint64_t seed = plan.seed;
  // A time-bounded campaign of the same seed and settings goes on where the last one in this
  // folder stopped (a requeued shard does not run its first hours again); a --runs budget names
  // a fixed set of sequences, which runs again.
  const bool sameStream =
      previous && previous->nextSequence && previous->seed == identity.seed &&
      previous->shard == identity.shard && previous->backend == identity.backend &&
      previous->policy == identity.policy && previous->faults == identity.faults &&
      previous->ops == identity.ops && previous->threads == identity.threads;
  if (sameStream) campaign.keepFrontier(*previous->nextSequence, previous->unfinished);
  if (sameStream && !runs) {
    campaign.startAt(*previous->nextSequence, previous->unfinished);
    std::printf("continuing the stream of seed %llu at its sequence %llu\n",
                static_cast<unsigned long long>(seed),
                static_cast<unsigned long long>(*previous->nextSequence));
    std::fflush(stdout);
  }
  campaign.setStats(store.root() / kStatsFile, identity, previous);
  campaign.run(runs, plan.time);

  CampaignResult result;
  result.report = campaign.report();
  result.statusLine = campaign.statusLine();
  result.uniqueFindings = campaign.uniqueFindings();
  result.harnessBroken = campaign.harnessBroken();
  result.writeFailure = campaign.writeFailure();
  result.unsupported = campaign.unsupported();
  result.failuresFound = campaign.failuresFound();
  return result;
}

}  // namespace gpufuzz
