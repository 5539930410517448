// Shrinker.cpp: greedy search over single removals and simplifications to a 1-minimal sequence.
#include "harness/search/Shrinker.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>

#include "harness/search/Finding.h"
#include "harness/supervise/CrashSite.h"
#include "model/SequenceEdits.h"

namespace gpufuzz {

namespace {

bool needsConfirmation(OutcomeClass cls) {
  return cls == OutcomeClass::Slow;
}

/// A sequence longer than this first loses ranges of operations, halving as delta debugging
/// does: most of it is rarely needed, and a range goes in one run where single edits take one
/// each. Ranges first above 32 operations, not 200, cut shrinks of 70-145 operations on sim from
/// 291-583 executions to 118-206 with 16 jobs, and from 47-111 to 31-65 with 2, to minimal
/// sequences as short (bench/RESULTS.md).
constexpr std::size_t kRangesFirstOver = 32;
/// Up to this many operations every single edit is a candidate at once. A persistent process's
/// history runs to thousands of operations: every single edit of it, built at once, would not
/// fit in memory.
constexpr std::size_t kSingleEditsUpTo = 200;
/// How often a round of candidates asks whether the shrink window closed or its turn ended.
constexpr auto kClosedPoll = std::chrono::milliseconds(50);

/// What `tried` remembers of a candidate: its operations' hash, not their text.
uint64_t candidateKey(const Sequence& seq) {
  return stableHash(normalizedOperations(seq));
}

}  // namespace

FailureKey FailureKey::of(const TrialResult& first, bool anyOp) {
  FailureKey key = of(first.outcome);
  const std::string& stacks = first.evidence.stacks;
  if (anyOp && key.cls == OutcomeClass::Crash && key.fault.empty() &&
      stacks.starts_with(kRunnerCrashFramesBy)) {
    key.crashState = gpufuzz::crashState(stacks);
  }
  return key;
}

bool FailureKey::matches(const TrialResult& t) const {
  if (crashState.empty()) return matches(t.outcome);
  return t.outcome.cls == cls && t.outcome.fault == fault &&
         gpufuzz::crashState(t.evidence.stacks) == crashState;
}

bool Shrinker::accept(ShrinkResult& result, const FailureKey& key,
                      std::vector<std::pair<Edit, Sequence>>& batch,
                      std::map<uint64_t, bool>& tried,
                      const std::function<void(const std::string&)>& onStep, uint32_t tries) {
  const std::optional<Millis> limit = key.candidateLimit(candidateLimit_);
  // Only the first candidate in order that reproduces is taken: once one does, those after it
  // are cancelled, and the result still does not depend on timing. Those before it run on.
  const auto cancels = std::make_unique<RunCancel[]>(batch.size());
  const auto cancelFrom = [&](std::size_t first) {
    for (std::size_t j = first; j < batch.size(); ++j)
      cancels[j].cancel();
  };
  // The window's close or the turn's end cancels the round too, so that a round of slow
  // candidates does not run on into the time its confirmations need.
  std::atomic<bool> closedDuring{false};
  std::jthread watcher([&](const std::stop_token& stop) {
    std::mutex m;
    std::condition_variable_any wake;
    std::unique_lock lock(m);
    // closed() never opens again once closed: the window's close and a turn's end both stay.
    while (!stop.stop_requested()) {
      wake.wait_for(lock, stop, kClosedPoll, [] { return false; });
      if (!stop.stop_requested() && closed()) {
        closedDuring = true;
        return cancelFrom(0);
      }
    }
  });
  // A threaded candidate gets up to `tries` tries, each with its own schedule; it is kept at
  // the first that fails the same way (docs/sequences.md, Threads).
  const auto outcomes = runConcurrently<std::optional<TrialResult>>(
      batch.size(), jobs_, [&](std::size_t i) -> std::optional<TrialResult> {
        const Sequence& candidate = batch[i].second;
        if (tried.count(candidateKey(candidate)) > 0) return std::nullopt;
        TrialResult t = trials_.runTries(
            candidate, needsConfirmation(key.cls) ? TrialMode::Confirmed : TrialMode::Quick, limit,
            threadedFailure_ ? trials_.triesFor(candidate, tries) : 1,
            [&](const TrialResult& r) { return key.matches(r); }, baseAttempt_, key.plantedHang(),
            &cancels[i]);
        if (!t.harnessError && key.matches(t)) cancelFrom(i + 1);
        return t;
      });
  watcher.request_stop();
  watcher.join();
  bool progressed = false;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto& [edit, candidate] = batch[i];
    if (!outcomes[i]) continue;
    result.executions += outcomes[i]->executions;
    // A cancelled candidate was not judged: it is neither tried nor counted as cut.
    if (outcomes[i]->evidence.cancelled) {
      ++result.candidatesCancelled;
      // Left unjudged by the window's close or the turn's end: the shrink did not run out.
      result.cutShort = result.cutShort || closedDuring;
      continue;
    }
    if (limit && outcomes[i]->evidence.stuck) ++result.candidatesCut;
    const bool reproduced = !outcomes[i]->harnessError && key.matches(*outcomes[i]);
    tried[candidateKey(candidate)] = reproduced;
    if (!reproduced || progressed) continue;
    const std::string step = edit.describe(result.minimal);
    result.minimal = std::move(candidate);
    result.outcome = outcomes[i]->outcome;
    result.steps.push_back(step);
    if (onStep) onStep(step);
    progressed = true;
  }
  return progressed;
}

uint32_t Shrinker::triesPerCandidate() const {
  const std::lock_guard lock(rateMutex_);
  return triesForRate(rateHits_, rateTries_);
}

uint32_t triesForRate(uint64_t hits, uint64_t tries) {
  // 1 - (1 - rate)^K >= 0.95; no hit yet counts as one more try that hit.
  const double rate = static_cast<double>(std::max<uint64_t>(hits, 1)) /
                      static_cast<double>(std::max<uint64_t>(tries, 1) + (hits == 0 ? 1 : 0));
  if (rate >= 0.95) return 1;
  const double k = std::ceil(std::log(0.05) / std::log(1.0 - rate));
  return std::clamp(static_cast<uint32_t>(k), 1U, Shrinker::kMostTries);
}

void Shrinker::observeRate(uint32_t hits, uint32_t tries) {
  const std::lock_guard lock(rateMutex_);
  rateHits_ += hits;
  rateTries_ += tries;
}

ShrinkResult Shrinker::shrink(const Sequence& failing, const RunOutcome& failure,
                              const FailureKey& key,
                              const std::function<void(const std::string&)>& onStep) {
  ShrinkResult result;
  result.minimal = failing;
  result.outcome = failure;
  threadedFailure_ = failing.threadCount() > 1;
  // Asked only while candidates are left, so a shrink that ran out of them is not cut short.
  const auto cut = [this, &result] { return result.cutShort = result.cutShort || closed(); };
  if (threadedFailure_) {
    // The rate a threaded failure reproduces at sets how many tries each candidate gets.
    const Reproductions probe = reproductions(failing, key, kRateProbe);
    result.executions += probe.executions;
    if (probe.hits == 0 && !cut()) {
      // None of its first tries met it again: the tries a candidate could get at most decide.
      // On sim a slow set_textures met once under --threads 2 gave no hit in about 3500
      // executions of its shrink, and held the examiner 14 minutes before a stop.
      const Reproductions more = reproductions(failing, key, kMostTries - kRateProbe, kRateProbe);
      result.executions += more.executions;
      result.unreproduced = more.hits == 0 && !cut();
    }
  }
  if (result.unreproduced) return result;
  std::map<uint64_t, bool> tried;  // candidates' keys -> reproduced

  // Ranges first while the sequence is long: halves, then quarters, ... each size tried until
  // no range of it can go, candidates built only `jobs` at a time.
  for (std::size_t chunk = result.minimal.ops.size() / 2;
       chunk >= 1 && result.minimal.ops.size() > kRangesFirstOver && !cut();) {
    bool progressed = false;
    for (std::size_t first = 0; first < result.minimal.ops.size() && !progressed;) {
      std::vector<std::pair<Edit, Sequence>> batch;
      for (; first < result.minimal.ops.size() && batch.size() < jobs_; first += chunk) {
        if (auto candidate = removeRange(result.minimal, first, chunk)) {
          batch.emplace_back(Edit{Edit::Kind::RemoveRange, first, {}, chunk, {}, {}},
                             std::move(*candidate));
        }
      }
      progressed = accept(result, key, batch, tried, onStep, triesPerCandidate());
      if (cut()) break;
    }
    if (!progressed) chunk /= 2;
    chunk = std::min(chunk, result.minimal.ops.size() / 2);
  }

  // Single edits until none reproduces: batches of `jobs` candidates, the first reproducing one
  // in candidate order taken. A threaded candidate gets `allTries` kMostTries tries.
  const auto singleEdits = [&](bool allTries) {
    bool progressed = result.minimal.ops.size() <= kSingleEditsUpTo;
    while (progressed && !cut()) {
      progressed = false;
      auto candidates = shrinkCandidates(result.minimal);
      for (std::size_t start = 0; start < candidates.size() && !progressed && !cut();
           start += jobs_) {
        const std::size_t count = std::min<std::size_t>(jobs_, candidates.size() - start);
        std::vector<std::pair<Edit, Sequence>> batch(
            std::make_move_iterator(candidates.begin() + static_cast<std::ptrdiff_t>(start)),
            std::make_move_iterator(candidates.begin() +
                                    static_cast<std::ptrdiff_t>(start + count)));
        progressed =
            accept(result, key, batch, tried, onStep, allTries ? kMostTries : triesPerCandidate());
      }
    }
  };
  singleEdits(false);
  // A threaded candidate's tries follow the failing sequence's rate, but a removal may lower
  // the rate: a race shrunk on sim kept a second draw that 64 tries showed it did not need. So
  // a threaded shrink ends with a pass at kMostTries tries a candidate, again for those that
  // missed, as strong as the check a replay of the result would make.
  if (threadedFailure_ && !result.cutShort) {
    std::erase_if(tried, [](const auto& entry) { return !entry.second; });
    singleEdits(true);
  }
  Sequence renamed = renumbered(result.minimal);
  renamed.directives = failing.directives;
  result.minimal = std::move(renamed);
  return result;
}

Shrinker::Reproductions Shrinker::reproductions(const Sequence& seq, const FailureKey& key,
                                                uint32_t times, uint32_t firstTry) {
  // The first run keeps the evidence (stacks of a stuck child); the others only count. Each
  // try has its own schedule, so a threaded sequence's rate is over schedules.
  // A hang's or spin's frames come only from a debugger on a stuck run, so every try takes them
  // until a reproducing one has: a failure met 1 time in 5 would otherwise have no frames when
  // only try 0 took them.
  const bool stuckKey = key.cls == OutcomeClass::Hang || key.cls == OutcomeClass::Spin;
  std::atomic<bool> framed{false};
  const auto outcomes = runConcurrently<TrialResult>(times, jobs_, [&](std::size_t i) {
    const uint64_t attempt = firstTry + i;
    const bool evidence = attempt == 0 || (stuckKey && !framed.load());
    TrialResult t = trials_.run(seq, evidence ? TrialMode::Evidence : TrialMode::Confirmed,
                                std::nullopt, attempt);
    if (!t.harnessError && key.matches(t) && !t.evidence.stacks.empty()) framed = true;
    return t;
  });
  Reproductions r;
  for (const TrialResult& t : outcomes) {
    r.executions += t.executions;
    if (t.harnessError) ++r.unjudged;
    if (t.harnessError || !key.matches(t)) continue;
    ++r.hits;
    if (!r.evidence || (r.evidence->stacks.empty() && !t.evidence.stacks.empty())) {
      r.evidence = t.evidence;
    }
  }
  if (seq.threadCount() > 1 && times > 0) observeRate(r.hits, times);
  return r;
}

}  // namespace gpufuzz
