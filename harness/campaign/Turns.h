// Turns.h: whose turn it is to shrink, and with --persistent the failures queued for the worker
// that examines (docs/campaigns.md, "Triage").
//
// The contract:
// - One shrink runs at a time: its candidates use the --jobs child slots. A failure at a new
//   crash site goes first: the others wait while one waits for the shrink.
// - With --persistent one worker at a time examines. The others queue their failures for it and
//   go on fuzzing; otherwise every worker would stand waiting for the shrink.
// - Queued failures take their worker's claims with them. At most kMostQueued wait; beyond, a
//   worker waits for room.
// - The examiner takes them in ExamineOrder.h's order. It gives up its place in the step that
//   finds the queue empty, so a failure queued as it ends is never left behind.
// - With --persistent and --time, a shrink's turn is its even share of the shrink window left as
//   it began, split with each distinct cause queued. So one slow shrink cannot take a night's
//   window from the causes behind it. A shrink alone keeps the window.
// - The shrink window closes with the grace's last fifth, left to the confirmations of the
//   shrinks under way. A shrink that ran to the end of the grace would leave its cause
//   unconfirmed.
//
// Thread-safe: `mutex_` guards the shrink's holder, the new sites waiting, the examiner's place,
// the queue and the causes examined. `turn_` wakes the workers waiting for any of them. Triage's
// lock may be taken while it is held (queueOrExamine's `make`), never the other way round.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness/campaign/FindingStore.h"
#include "harness/campaign/Stops.h"
#include "harness/campaign/Triage.h"

namespace gpufuzz {

/// A failure waiting for the worker that examines (--persistent): its worker goes on fuzzing.
struct QueuedFailure {
  Sequence seq;
  uint64_t seqSeed = 0;
  TrialResult t;
  std::size_t ranBefore = 0;
  uint64_t k = 0;                   // its shard counter (SeedSchedule), done once examined
  Triaged triaged;                  // what triage made of it when it was queued
  std::vector<std::string> claims;  // causes its worker claimed to examine (Triage::persistentHit)
};

class Turns {
 public:
  using Clock = std::chrono::steady_clock;

  /// `persistent`: whether workers queue failures for one examiner; `deadline` and `grace`:
  /// --time's, which bound the shrink window.
  Turns(const FindingStore& store, const Stops& stops, bool persistent,
        std::optional<Clock::time_point> deadline, std::chrono::seconds grace);

  /// The shrink, held until it goes out of scope.
  class [[nodiscard]] Shrink {
   public:
    explicit Shrink(Turns& turns) : turns_(&turns) {}
    Shrink(Shrink&& other) noexcept : turns_(std::exchange(other.turns_, nullptr)) {}
    Shrink(const Shrink&) = delete;
    Shrink& operator=(const Shrink&) = delete;
    Shrink& operator=(Shrink&&) = delete;
    ~Shrink() {
      if (turns_) turns_->releaseShrink();
    }

   private:
    Turns* turns_;
  };
  /// Waits for the failure's turn (a new site's goes first) and takes the shrink.
  Shrink takeShrinkInTurn(bool newSite);
  /// Takes the shrink for the examiner, who holds it while it drains the queue.
  Shrink takeShrink();

  /// With --persistent: queues the failure `make` builds (under the lock, so its worker's claims
  /// go with it in one step) while another worker examines, and returns true. False: no one
  /// examined, and the caller is the examiner now.
  bool queueOrExamine(const std::function<QueuedFailure()>& make);
  /// The examiner's next queued failure; nullopt when none is left, and then the caller is the
  /// examiner no more.
  std::optional<QueuedFailure> next();
  /// The examiner was interrupted (an exception): another may take its place. Returns what it
  /// left in the queue.
  std::vector<QueuedFailure> endExaminer();
  /// A shrink examines `as` (a settled cause, or a failure kind): ExamineOrder.h ranks it so.
  void examining(const std::string& as);
  /// The failures queued now.
  std::size_t queued() const;

  /// When the shrink of `cause` (a settled cause, or a failure kind) gives way to the causes
  /// queued behind it; empty: never (no --persistent, no --time, or the window closed).
  std::function<bool()> turnOver(const std::string& cause);
  /// Where the shrink window of a campaign with --time closes (TrialRunner::shrinkUntil).
  Clock::time_point shrinkWindowEnd() const;

  /// Failures queued at most; beyond, a worker waits until there is room.
  static constexpr std::size_t kMostQueued = 64;

 private:
  void releaseShrink();
  /// The distinct causes in the queue other than `shrinking`. A variant, or a failure whose
  /// cause was recorded since it was queued, waits for no verdict: its cause is known.
  std::size_t causesQueued(const std::string& shrinking) const;

  const FindingStore& store_;
  const Stops& stops_;
  const bool persistent_;
  const std::optional<Clock::time_point> deadline_;
  const std::chrono::seconds grace_;
  mutable std::mutex mutex_;
  std::condition_variable turn_;
  bool shrinkHeld_ = false;
  unsigned newSitesWaiting_ = 0;
  bool examinerActive_ = false;
  std::deque<QueuedFailure> queued_;
  std::set<std::string> examinedAs_;  // the causes and kinds a shrink examined
};

}  // namespace gpufuzz
