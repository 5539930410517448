// FindingSink.cpp: new findings printed, reported and explained.
#include "harness/campaign/FindingSink.h"

#include "harness/base/Json.h"
#include "harness/search/Explainer.h"
#include "harness/search/ExplanationReport.h"
#include "harness/search/Minimize.h"
#include "model/SequenceEdits.h"

namespace gpufuzz {

namespace {

std::string indented(const std::string& text) {
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

}  // namespace

FindingSink::FindingSink(const CampaignPlan& plan, TrialRunner& trials, StatusBoard& board,
                         const Stops& stops, unsigned freshJobs, Clock::time_point started)
    : plan_(plan),
      trials_(trials),
      board_(board),
      stops_(stops),
      freshJobs_(freshJobs),
      started_(started) {}

void FindingSink::add(const Finding& f, const std::filesystem::path& dir) {
  std::lock_guard lock(mutex_);
  lastFind_ = Clock::now();
  lastFindUnix_ = unixNow();
  findings_.push_back({f, (dir / "minimal.seq").string()});
  print(f, dir);
  if (plan_.reportFile) writeReport(*plan_.reportFile, reportLocked());
  if (plan_.explain) toExplain_.emplace_back(f, dir);
}

void FindingSink::explainPending() {
  {
    std::lock_guard lock(mutex_);
    if (explainerActive_) return;  // the worker explaining now takes these too
    explainerActive_ = true;
  }
  for (;;) {
    std::optional<std::pair<Finding, std::filesystem::path>> next;
    {
      std::lock_guard lock(mutex_);
      if (toExplain_.empty() || stops_.requested()) {
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

Report FindingSink::report() const {
  std::lock_guard lock(mutex_);
  return reportLocked();
}

Report FindingSink::reportLocked() const {
  Report r;
  r.command = "fuzz";
  r.seed = plan_.seed;
  r.describeRun(trials_.setup());
  r.extra.emplace_back("device", jsonString(plan_.deviceDescription));
  r.executions = trials_.executions();
  r.elapsedSeconds = std::chrono::duration<double>(Clock::now() - started_).count();
  r.findings = findings_;
  return r;
}

std::size_t FindingSink::size() const {
  std::lock_guard lock(mutex_);
  return findings_.size();
}

std::optional<FindingSink::Clock::time_point> FindingSink::lastFind() const {
  std::lock_guard lock(mutex_);
  return lastFind_;
}

std::optional<int64_t> FindingSink::lastFindUnix() const {
  std::lock_guard lock(mutex_);
  return lastFindUnix_;
}

std::string FindingSink::activity() const {
  std::lock_guard lock(mutex_);
  return explaining_;
}

void FindingSink::print(const Finding& f, const std::filesystem::path& dir) {
  const std::string file = (dir / "minimal.seq").string();
  board_.say(stdout,
             "\nFOUND %s at %s (%s): %s\n%s%s  %s; %llu executions to find, %llu to "
             "shrink\n  saved to %s\n  replay: gpufuzz replay %s\n",
             std::string(outcomeClassName(f.outcome.cls)).c_str(),
             f.outcome.at ? atText(*f.outcome.at).c_str() : "-", f.outcome.op.c_str(),
             f.outcome.detail.c_str(), indented(normalizedOperations(f.minimal)).c_str(),
             f.outcome.fault.empty() ? "" : ("  planted by " + f.outcome.fault + "\n").c_str(),
             f.reproductionText().c_str(), static_cast<unsigned long long>(f.executionsToFind),
             static_cast<unsigned long long>(f.executionsToShrink), file.c_str(), file.c_str());
}

void FindingSink::explainInto(const Finding& f, const std::filesystem::path& dir) {
  ExplainOptions options;
  options.shrink = false;  // already 1-minimal
  options.knownReproduction = std::pair{f.reproduced, f.confirmations};
  options.candidateLimit = candidateStuckLimit(f);
  try {
    const Explanation e = explainFailure(trials_, freshJobs_, f.minimal, f.outcome, options);
    if (stops_.requested()) return;  // its trials were cut short: no explanation
    writeFileAtomically(dir / "explanation.md", explanationMarkdown(explanationReport(e)));
  } catch (const WriteError&) {
    throw;  // the disk, not the explanation: the campaign stops
  } catch (const std::exception& error) {
    board_.say(stderr, "gpufuzz: could not explain %s: %s\n", dir.c_str(), error.what());
  }
}

}  // namespace gpufuzz
