// Campaign.cpp: a campaign as the composition of its parts, each with its own lock and contract:
//   SeedSchedule  which sequence of the seed stream runs next; what is unfinished
//   Worker        one of --jobs workers: runs sequences, re-runs persistent failures fresh
//   Triage        causes settled from a failure's first run, claims, and the tally
//   Turns         one shrink at a time; with --persistent the examiner's queue
//   Examiner      failures confirmed, shrunk and recorded
//   FindingSink   new findings printed, in the --report file, explained
//   StatusBoard   the status, stats.json and plot_data
//   Stops         why the campaign stops; RunCounts: what it counts, lock-free
// This file builds them, starts the workers and the board, and reads the stats and the status
// from all of them. The seed stream may be sharded across processes and machines
// (SeedStream.h); a campaign in a folder where campaigns ran before continues their cumulative
// counts, as the findings store knows their findings.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "harness/base/Json.h"
#include "harness/campaign/Campaign.h"
#include "harness/campaign/Examiner.h"
#include "harness/campaign/FindingSink.h"
#include "harness/campaign/RunCounts.h"
#include "harness/campaign/SeedSchedule.h"
#include "harness/campaign/SequenceSource.h"
#include "harness/campaign/StatusBoard.h"
#include "harness/campaign/Stops.h"
#include "harness/campaign/Triage.h"
#include "harness/campaign/Turns.h"
#include "harness/campaign/Worker.h"

namespace gpufuzz {

namespace {

using Clock = std::chrono::steady_clock;

/// "calls 1200 (31% overlapped)" for the status, or empty when no run made a runtime call.
std::string callsText(const RuntimeCalls& calls) {
  if (calls.calls == 0) return {};
  return "calls " + std::to_string(calls.calls) + " (" +
         std::to_string(100 * calls.overlapped / calls.calls) + "% overlapped)";
}

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string jsonName(OutcomeClass c) {
  return "\"" + std::string(outcomeClassName(c)) + "\"";
}

/// The children a shrink, its confirmations and an explanation may run at once.
unsigned freshJobs(const CampaignPlan& plan) {
  const unsigned jobs = std::max(plan.jobs, 1U);
  return plan.freshJobs == 0 ? jobs : std::min(plan.freshJobs, jobs);
}

std::optional<Clock::time_point> deadlineOf(const CampaignPlan& plan, Clock::time_point started) {
  return plan.time ? std::optional(started + *plan.time) : std::nullopt;
}

class Campaign {
 public:
  Campaign(const CampaignPlan& plan, TrialRunner& trials, FindingStore& store)
      : plan_(plan),
        trials_(trials),
        store_(store),
        source_(plan.gen, plan.guided, plan.seeds, store.root() / "queue"),
        stops_(plan.stopRequested, trials, deadlineOf(plan, started_)),
        schedule_(plan.seed, plan.shard, plan.runs),
        board_(StatusBoard::Sources{[this](bool finished) { return stats(finished); },
                                    [this] { return status(); },
                                    [this] { return trials_.executions(); },
                                    [this](const WriteError& e) { stops_.writeFailed(e); }},
               store.root() / kStatsFile, plan.quiet),
        sink_(plan, trials, board_, stops_, freshJobs(plan), started_),
        triage_(trials, store, stops_, schedule_, plan.deviceDescription),
        turns_(store, stops_, plan.persistent > 1, stops_.deadline(), plan.grace),
        examiner_(
            plan, trials, store,
            {triage_, turns_, sink_, schedule_, stops_, counts_, [this] { board_.refreshSoon(); }},
            freshJobs(plan)) {}

  SeedSchedule& schedule() { return schedule_; }

  void run() {
    // Generation ends with the time; a shrink under way may finish within the grace, which
    // keeps its last fifth for confirmations (Turns::shrinkWindowEnd).
    if (const auto deadline = stops_.deadline()) {
      trials_.stopAt(*deadline + plan_.grace);
      trials_.shrinkUntil(turns_.shrinkWindowEnd());
    }
    const Worker::Parts parts{schedule_, source_, stops_, triage_, examiner_, board_, counts_};
    std::vector<std::jthread> workers;
    for (unsigned w = 0; w < plan_.jobs; ++w) {
      workers.emplace_back([this, parts] {
        stops_.guarded([this, parts] { Worker(plan_, trials_, store_, parts).work(); });
      });
    }
    board_.writeStats(false);
    std::jthread status([this](std::stop_token stop) { board_.run(stop); });
    std::jthread periodic;
    if (plan_.periodic)
      periodic = std::jthread([this](std::stop_token stop) { periodicLoop(stop); });
    for (auto& w : workers)
      w.join();
    triage_.settleLeftDeferred();
    status.request_stop();
    status.join();
    if (periodic.joinable()) {
      periodic.request_stop();
      periodic.join();
    }
    board_.writeStats(true);
    board_.appendPlotLine(true);
  }

  /// This run's stats, over the counts of the earlier campaigns in the folder.
  CampaignStats stats(bool finished) const {
    CampaignStats s = plan_.identity;
    s.startTime = startedUnix_;
    s.lastUpdate = unixNow();
    const std::optional<int64_t> lastFind = sink_.lastFindUnix();
    s.lastFind = lastFind ? lastFind : plan_.previous ? plan_.previous->lastFind : std::nullopt;
    s.deadline = trials_.deadlines().describe();
    s.deadlineByKind = trials_.deadlines().describeKinds();
    s.childrenByGpu = trials_.childrenByGpu();
    s.shrinking = activity();
    s.nextSequence = schedule_.nextSequence();
    s.search = source_.guided() ? "guided" : "blind";
    s.signals = source_.signals();
    s.queue = source_.queued();
    s.mutants = counts_.mutants.load();
    s.answers = source_.answers();
    s.unfinished = schedule_.unfinished();
    s.run = runCounts();
    s.execsPerSecond = s.run.runTimeSeconds > 0
                           ? static_cast<double>(s.run.executions) / s.run.runTimeSeconds
                           : 0.0;
    s.uniqueFindings = store_.size();
    s.newFindings = sink_.size();
    const std::string why = stops_.why();
    s.finished = finished && why.empty();
    s.stopped = finished && !s.finished;
    if (s.stopped) s.stopReason = why;
    if (plan_.previous) s.cumulative = plan_.previous->cumulative;
    s.cumulative += s.run;
    return s;
  }

  Report report() const {
    Report r = sink_.report();
    std::string byClass = "{";
    for (std::size_t c = 0; c < counts_.byClass.size(); ++c) {
      byClass += (c ? ", " : "") + jsonName(static_cast<OutcomeClass>(c)) + ": " +
                 std::to_string(counts_.byClass[c].load());
    }
    r.extra.emplace_back("by_class", byClass + "}");
    r.extra.emplace_back("sequences", std::to_string(counts_.sequences.load()));
    r.extra.emplace_back("shard", plan_.identity.shard
                                      ? jsonString(shardText(*plan_.identity.shard))
                                      : std::string("null"));
    r.extra.emplace_back("harness_errors", std::to_string(counts_.harnessErrors.load()));
    r.extra.emplace_back("unconfirmed", std::to_string(counts_.unconfirmed.load()));
    r.extra.emplace_back("tally", jsonString(triage_.tallyText(turns_.queued())));
    return r;
  }

  /// Failures this run that stand: recorded findings (new or known) and hits of saturated kinds.
  /// A failure whose minimal sequence never reproduced was noise and does not count.
  uint64_t failuresFound() const { return counts_.failures + counts_.failuresCutShort; }
  /// Causes this run confirmed and bucketed: not those a stop cut short.
  std::size_t uniqueFindings() const { return triage_.tally().confirmed; }
  bool harnessBroken() const { return stops_.broken() && stops_.unsupportedText().empty(); }
  std::string writeFailure() const { return stops_.writeFailure(); }
  std::string unsupported() const { return stops_.unsupportedText(); }
  std::string statusLine() const { return gpufuzz::statusLine(status()); }

 private:
  /// This run's counts, for stats.json.
  CampaignCounts runCounts() const {
    CampaignCounts run;
    run.campaigns = 1;
    run.executions = trials_.executions();
    run.sequences = counts_.sequences.load();
    run.calls = trials_.calls().calls;
    run.callsOverlapped = trials_.calls().overlapped;
    for (std::size_t c = 0; c < counts_.byClass.size(); ++c)
      run.byClass[c] = counts_.byClass[c].load();
    run.failures = counts_.failures.load();
    run.unconfirmed = counts_.unconfirmed.load();
    run.longConfirmations = trials_.longConfirmations() - confirmationsBefore_.first;
    run.confirmationsSkipped = trials_.confirmationsSkipped() - confirmationsBefore_.second;
    run.harnessErrors = counts_.harnessErrors.load();
    run.persistentFailures = counts_.persistentFailures.load();
    run.persistentSame = counts_.persistentSame.load();
    run.persistentNeededHistory = counts_.persistentNeededHistory.load();
    const Triage::Tally tally = triage_.tally();
    run.confirmedCauses = tally.confirmed;
    run.variants = tally.variants;
    run.triageHits = tally.triageHits;
    run.queuedFailures = tally.queuedFailures;
    run.unexaminedByClass = tally.unexamined;
    run.unexamined = total(tally.unexamined);
    run.runTimeSeconds = secondsSince(started_);
    return run;
  }

  /// What the status shows the examiner and the explainer doing.
  std::string activity() const {
    const std::string shrinking = examiner_.activity();
    const std::string explaining = sink_.activity();
    if (shrinking.empty() || explaining.empty()) return shrinking + explaining;
    return shrinking + ", " + explaining;
  }

  CampaignStatus status() const {
    CampaignStatus st;
    st.elapsed = secondsSince(started_);
    st.executions = trials_.executions();
    st.rate = st.elapsed > 0 ? static_cast<double>(st.executions) / st.elapsed : 0.0;
    st.sequences = counts_.sequences.load();
    for (std::size_t c = 0; c < counts_.byClass.size(); ++c) {
      if (counts_.byClass[c] == 0) continue;
      st.classes += " " + std::string(outcomeClassName(static_cast<OutcomeClass>(c))) + "=" +
                    std::to_string(counts_.byClass[c].load());
    }
    st.unique = triage_.tally().confirmed;
    st.tally = triage_.tallyText(turns_.queued());
    const std::optional<Clock::time_point> lastFind = sink_.lastFind();
    st.lastFind = lastFind
                      ? std::to_string(static_cast<long long>(secondsSince(*lastFind))) + "s ago"
                      : "never";
    st.deadline = trials_.deadlines().describe();
    st.shrinking = activity();
    st.calls = callsText(trials_.calls());
    st.search = "signals " + std::to_string(source_.signals());
    if (source_.guided()) {
      st.search += ", queue " + std::to_string(source_.queued()) + ", mutants " +
                   std::to_string(counts_.mutants.load());
    }
    if (plan_.persistent > 1) st.persistent = persistentText();
    return st;
  }

  /// --persistent: how often a fresh process failed as the persistent one did.
  std::string persistentText() const {
    const uint64_t failures = counts_.persistentFailures.load();
    const uint64_t same = counts_.persistentSame.load();
    char text[160];
    std::snprintf(text, sizeof text,
                  "persistent %u: stability %s (%llu of %llu failures the same alone), %llu "
                  "needed the sequences before them",
                  plan_.persistent,
                  failures ? (std::to_string(100 * same / failures) + "%").c_str() : "100%",
                  static_cast<unsigned long long>(same), static_cast<unsigned long long>(failures),
                  static_cast<unsigned long long>(counts_.persistentNeededHistory.load()));
    return text;
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

  const CampaignPlan& plan_;
  TrialRunner& trials_;
  FindingStore& store_;
  const Clock::time_point started_ = Clock::now();
  const int64_t startedUnix_ = unixNow();
  const std::pair<uint64_t, uint64_t> confirmationsBefore_{trials_.longConfirmations(),
                                                           trials_.confirmationsSkipped()};
  RunCounts counts_;
  SequenceSource source_;
  Stops stops_;
  SeedSchedule schedule_;
  StatusBoard board_;
  FindingSink sink_;
  Triage triage_;
  Turns turns_;
  Examiner examiner_;
};

}  // namespace

CampaignResult runCampaign(const CampaignPlan& plan, TrialRunner& trials, FindingStore& store) {
  Campaign campaign(plan, trials, store);
  const CampaignStats& identity = plan.identity;
  const std::optional<CampaignStats>& previous = plan.previous;
  // A time-bounded campaign of the same seed and settings goes on where the last one in this
  // folder stopped (a requeued shard does not run its first hours again); a --runs budget names
  // a fixed set of sequences, which runs again.
  const bool sameStream =
      previous && previous->nextSequence && previous->seed == identity.seed &&
      previous->shard == identity.shard && previous->backend == identity.backend &&
      previous->policy == identity.policy && previous->faults == identity.faults &&
      previous->ops == identity.ops && previous->threads == identity.threads;
  if (sameStream) campaign.schedule().keepFrontier(*previous->nextSequence, previous->unfinished);
  if (sameStream && !plan.runs) {
    campaign.schedule().startAt(*previous->nextSequence, previous->unfinished);
    std::printf("continuing the stream of seed %llu at its sequence %llu\n",
                static_cast<unsigned long long>(plan.seed),
                static_cast<unsigned long long>(*previous->nextSequence));
    std::fflush(stdout);
  }
  campaign.run();

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
