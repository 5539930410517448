// StatusBoard.h: what a campaign shows while it runs. Once a second, and at once when a part asks
// (refreshSoon): the status, as a block refreshed in place on a terminal or as a line in a log, and
// <out>/stats.json rewritten (StatsFile.h). Once a minute, and when the campaign ends: a line of
// <out>/plot_data (PlotData.h).
//
// The contract:
// - The board reads what it shows through the sources it is given, never a part's state: the
//   campaign composes them (Campaign.cpp).
// - Messages (say) go between refreshes: the block is erased first and drawn again below them.
// - A stats file or plot line that cannot be written for want of space stops the campaign
//   (`writeFailed`); any other error is reported once, and the campaign goes on.
// - run() returns promptly at its stop: a campaign's elapsed time must not count a wait.
//
// Thread-safe: `outputMutex_` guards the terminal (the block's lines and the messages between
// them). It is taken last: a caller may hold its own part's lock while it prints (the
// FindingSink does), but nothing else is locked while the board holds it, and the status is read
// before it is taken.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "harness/base/AtomicFile.h"
#include "harness/campaign/StatsFile.h"

namespace gpufuzz {

/// What the status shows, read at one instant.
struct CampaignStatus {
  double elapsed = 0, rate = 0;
  uint64_t executions = 0, sequences = 0;
  std::string classes;     // " pass=12 hang=1"
  std::size_t unique = 0;  // causes confirmed this run
  std::string tally;       // Triage::tallyText
  std::string lastFind, deadline, shrinking;
  std::string persistent;  // --persistent: how often a fresh process agreed
  std::string calls;       // "calls 1200 (31% overlapped)", when runtime calls were made
  std::string search;      // "signals 812", and ", queue 97, mutants 40" under guided search
};

/// One line, for logs and the final summary.
std::string statusLine(const CampaignStatus& st);
/// The block a terminal shows, refreshed in place.
std::vector<std::string> statusBlock(const CampaignStatus& st);

class StatusBoard {
 public:
  struct Sources {
    std::function<CampaignStats(bool finished)> stats;
    std::function<CampaignStatus()> status;
    std::function<uint64_t()> executions;
    std::function<void(const WriteError&)> writeFailed;
  };
  /// `statsFile`: <out>/stats.json, beside which plot_data goes; empty: neither is written.
  /// `quiet`: no status is shown, and messages still are.
  StatusBoard(Sources sources, std::filesystem::path statsFile, bool quiet);

  /// Refreshes the status, the stats file and the plot data until `stop`; erases the block then.
  void run(std::stop_token stop);
  /// Rewrites stats.json.
  void writeStats(bool finished);
  /// Has run() refresh now rather than at its next second: a shrink that began shows in
  /// stats.json before it ends, for whoever stops the campaign by what the file says.
  void refreshSoon();
  /// A line of plot_data: the stats now, at the rate since the line before.
  void appendPlotLine(bool finished);

  /// Prints a message between status refreshes.
  template <typename... Args>
  void say(std::FILE* stream, const char* format, Args... args) {
    std::lock_guard lock(outputMutex_);
    clearBlock();
    std::fprintf(stream, format, args...);
    std::fflush(stream);
  }

 private:
  using Clock = std::chrono::steady_clock;
  /// Draws the status once (outputMutex_ not held: the status is read before it is taken).
  void show();
  /// Erases the status block from the terminal (outputMutex_ held): other output goes where it
  /// stood, and the next tick draws the block below it.
  void clearBlock();
  /// Says once that `what` could not be written for a cause other than space (which stops).
  void failedWrite(const char* what, const std::exception& error);

  Sources sources_;
  const std::filesystem::path statsFile_;
  const bool quiet_;
  const bool tty_;
  std::mutex outputMutex_;
  std::size_t blockLines_ = 0;  // outputMutex_
  /// The last plot line's time and executions: only the board's thread and, once it ended, the
  /// campaign's own touch it.
  std::pair<Clock::time_point, uint64_t> lastPlot_;
  std::atomic<bool> statsFailed_{false};
  /// run()'s wait, which refreshSoon cuts short: `wakeMutex_` guards `nudged_`.
  std::mutex wakeMutex_;
  std::condition_variable_any wake_;
  bool nudged_ = false;
};

}  // namespace gpufuzz
