// StatusBoard.cpp: the status block or line, stats.json and plot_data while a campaign runs.
#include "harness/campaign/StatusBoard.h"

#include <unistd.h>

#include <condition_variable>

#include "harness/campaign/PlotData.h"

namespace gpufuzz {

std::string statusLine(const CampaignStatus& st) {
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

std::vector<std::string> statusBlock(const CampaignStatus& st) {
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

StatusBoard::StatusBoard(Sources sources, std::filesystem::path statsFile, bool quiet)
    : sources_(std::move(sources)),
      statsFile_(std::move(statsFile)),
      quiet_(quiet),
      tty_(::isatty(STDERR_FILENO) != 0),
      lastPlot_{Clock::now(), sources_.executions()} {}

void StatusBoard::run(std::stop_token stop) {
  auto last = Clock::now();
  for (;;) {
    {
      std::unique_lock waitLock(wakeMutex_);
      wake_.wait_until(waitLock, stop, last + std::chrono::seconds(1), [this] { return nudged_; });
      nudged_ = false;
    }
    if (stop.stop_requested()) break;
    last = Clock::now();
    writeStats(false);
    if (last - lastPlot_.first >= std::chrono::minutes(1)) appendPlotLine(false);
    if (!quiet_) show();
  }
  std::lock_guard lock(outputMutex_);
  clearBlock();
}

void StatusBoard::show() {
  // Read before the terminal is taken: a part prints a finding holding its own lock, which
  // reading the status takes.
  const CampaignStatus st = sources_.status();
  const std::vector<std::string> block =
      tty_ ? statusBlock(st) : std::vector<std::string>{statusLine(st)};
  std::lock_guard lock(outputMutex_);
  if (!tty_) {
    std::fprintf(stderr, "%s\n", block.front().c_str());
    return;
  }
  clearBlock();
  for (const std::string& line : block)
    std::fprintf(stderr, "%s\033[K\n", line.c_str());
  blockLines_ = block.size();
}

void StatusBoard::clearBlock() {
  if (blockLines_ == 0) return;
  std::fprintf(stderr, "\033[%zuA\r\033[J", blockLines_);
  blockLines_ = 0;
}

void StatusBoard::refreshSoon() {
  {
    std::lock_guard lock(wakeMutex_);
    nudged_ = true;
  }
  wake_.notify_all();
}

void StatusBoard::writeStats(bool finished) {
  if (statsFile_.empty()) return;
  try {
    gpufuzz::writeStats(statsFile_, sources_.stats(finished));
  } catch (const WriteError& error) {
    sources_.writeFailed(error);
  } catch (const std::exception& error) {
    failedWrite("stats", error);
  }
}

void StatusBoard::appendPlotLine(bool finished) {
  if (statsFile_.empty()) return;
  const auto now = Clock::now();
  const uint64_t executions = sources_.executions();
  const double seconds = std::chrono::duration<double>(now - lastPlot_.first).count();
  const double rate =
      seconds > 0 ? static_cast<double>(executions - lastPlot_.second) / seconds : 0.0;
  lastPlot_ = {now, executions};
  try {
    appendPlotData(statsFile_.parent_path() / kPlotDataFile, sources_.stats(finished), rate);
  } catch (const WriteError& error) {
    sources_.writeFailed(error);
  } catch (const std::exception& error) {
    failedWrite("plot data", error);
  }
}

void StatusBoard::failedWrite(const char* what, const std::exception& error) {
  if (!statsFailed_.exchange(true))
    say(stderr, "gpufuzz: cannot write the %s: %s\n", what, error.what());
}

}  // namespace gpufuzz
