// Stops.h: why a campaign stops generating, and why it stopped, for stats.json and the result.
//
// The contract:
// - Generation goes on while no stop is requested and the harness works. The target must run
//   the model, every file must be written, and the --time budget must be left.
// - A stop request, or the time and grace spent, cuts short the runs under way (cutShort). Their
//   sequences stay unfinished for a resumed campaign.
// - A file that cannot be written (a full disk) stops the campaign at once. The trials' children
//   are stopped, and the first such file is the reason given.
//
// Thread-safe: `mutex_` guards the reasons: the stop's, the write failure, what the target lacks.
// Whether the harness is broken and whether a write failed are atomics, read on every run.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "harness/base/AtomicFile.h"
#include "harness/search/Trial.h"

namespace gpufuzz {

class Stops {
 public:
  using Clock = std::chrono::steady_clock;

  /// `stopRequested`: the user's stop (may be empty); `deadline`: where --time ends, if set.
  Stops(std::function<bool()> stopRequested, TrialRunner& trials,
        std::optional<Clock::time_point> deadline);

  /// A stop request, or the time and grace spent (the trials stop then).
  bool requested() const { return userRequested() || trials_.stopRequested(); }
  /// The user's stop request alone: findings cut short by it say so.
  bool userRequested() const { return stopRequested_ && stopRequested_(); }

  /// Whether generation goes on: no stop, a working harness, every write done, time left.
  bool budgetLeft() const;
  /// Whether a worker may take the next sequence: budgetLeft(), and a user's stop recorded.
  bool mayTake();
  /// Whether a stop came while a sequence was under way (recorded): by a stop request, or by
  /// the time and grace spent; the sequence is then cut short, not done.
  bool cutShort();

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
  /// short, and the campaign ends saying which file. What was written before stays whole.
  void writeFailed(const WriteError& e);
  /// The target said it cannot run a sequence of the model: the campaign stops, no finding.
  void unsupported(const std::string& what);
  /// Most runs failed in the harness itself: the campaign stops.
  void harnessBroken() { broken_ = true; }

  std::optional<Clock::time_point> deadline() const { return deadline_; }
  bool broken() const { return broken_.load(); }
  std::string writeFailure() const;
  std::string unsupportedText() const;
  /// Why the campaign stopped early, for stats.json; empty while it did not.
  std::string why() const;

 private:
  std::function<bool()> stopRequested_;
  TrialRunner& trials_;
  const std::optional<Clock::time_point> deadline_;
  std::atomic<bool> broken_{false};
  std::atomic<bool> writeFailed_{false};
  mutable std::mutex mutex_;
  std::string reason_;        // why the run was stopped; empty when it was not
  std::string writeFailure_;  // the write that stopped it, if one did
  std::string unsupported_;   // what the target lacks, if it said so
};

}  // namespace gpufuzz
