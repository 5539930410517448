// FindingSink.h: where a campaign's new findings go once the store has recorded them: printed,
// listed in the --report file and the final report, and explained (explanation.md).
//
// The contract:
// - add() takes each new finding once, as it is recorded: it prints it and rewrites the --report
//   file at once, so a campaign killed later still leaves both.
// - Explanations wait for explainPending(), which a worker calls when it holds neither the
//   shrink nor the examiner's place: an explanation can take minutes, and the failures met
//   meanwhile need the examiner. One worker explains at a time; a stop ends the explanations.
// - A finding that cannot be explained keeps its minimal.seq; the error is said. A file that
//   cannot be written (WriteError) is thrown on: the campaign stops.
//
// Thread-safe: `mutex_` guards the findings listed, the last find, the explanations waiting and
// the one under way. A finding is printed while it is held: the StatusBoard's lock comes after.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/campaign/CampaignPlan.h"
#include "harness/campaign/ReportFile.h"
#include "harness/campaign/StatusBoard.h"
#include "harness/campaign/Stops.h"

namespace gpufuzz {

class FindingSink {
 public:
  using Clock = std::chrono::steady_clock;

  /// `freshJobs`: the children an explanation may run at once; `started`: the campaign's start,
  /// for the report's elapsed time.
  FindingSink(const CampaignPlan& plan, TrialRunner& trials, StatusBoard& board, const Stops& stops,
              unsigned freshJobs, Clock::time_point started);

  /// A new finding, just recorded in `dir`.
  void add(const Finding& f, const std::filesystem::path& dir);
  /// Explains the findings added and not yet explained, oldest first, unless another worker
  /// does already or a stop came.
  void explainPending();

  /// The report of this campaign so far: its findings, with the run's description.
  Report report() const;
  /// The findings this campaign added.
  std::size_t size() const;
  /// The last find, when there was one: for the status, and as a unix time for stats.json.
  std::optional<Clock::time_point> lastFind() const;
  std::optional<int64_t> lastFindUnix() const;
  /// "explaining crash/buf_free" while an explanation runs; empty otherwise.
  std::string activity() const;

 private:
  Report reportLocked() const;
  void print(const Finding& f, const std::filesystem::path& dir);
  void explainInto(const Finding& f, const std::filesystem::path& dir);

  const CampaignPlan& plan_;
  TrialRunner& trials_;
  StatusBoard& board_;
  const Stops& stops_;
  const unsigned freshJobs_;
  const Clock::time_point started_;
  mutable std::mutex mutex_;
  std::vector<ReportedFinding> findings_;
  std::optional<Clock::time_point> lastFind_;
  std::optional<int64_t> lastFindUnix_;
  /// Findings added and not yet explained, oldest first, and the one explained now.
  std::deque<std::pair<Finding, std::filesystem::path>> toExplain_;
  std::string explaining_;
  bool explainerActive_ = false;
};

}  // namespace gpufuzz
