// Stops.cpp: a campaign's stop conditions and the reason it stopped.
#include "harness/campaign/Stops.h"

namespace gpufuzz {

Stops::Stops(std::function<bool()> stopRequested, TrialRunner& trials,
             std::optional<Clock::time_point> deadline)
    : stopRequested_(std::move(stopRequested)), trials_(trials), deadline_(deadline) {}

bool Stops::budgetLeft() const {
  if (requested() || broken_ || writeFailed_) return false;
  return !deadline_ || Clock::now() < *deadline_;
}

bool Stops::mayTake() {
  if (userRequested()) {
    std::lock_guard lock(mutex_);
    if (reason_.empty()) reason_ = "stop requested";
    return false;
  }
  return budgetLeft();
}

bool Stops::cutShort() {
  if (!requested()) return false;
  std::lock_guard lock(mutex_);
  if (reason_.empty()) reason_ = userRequested() ? "stop requested" : "--time and --grace spent";
  return true;
}

void Stops::writeFailed(const WriteError& e) {
  {
    std::lock_guard lock(mutex_);
    if (!writeFailure_.empty()) return;
    writeFailure_ = e.what();
    reason_ = writeFailure_;
  }
  writeFailed_ = true;
  trials_.stopAt(Clock::now());
}

void Stops::unsupported(const std::string& what) {
  {
    std::lock_guard lock(mutex_);
    if (unsupported_.empty()) unsupported_ = what;
  }
  broken_ = true;
}

std::string Stops::writeFailure() const {
  std::lock_guard lock(mutex_);
  return writeFailure_;
}

std::string Stops::unsupportedText() const {
  std::lock_guard lock(mutex_);
  return unsupported_;
}

std::string Stops::why() const {
  std::lock_guard lock(mutex_);
  if (!unsupported_.empty()) return "the target cannot run the model: " + unsupported_;
  if (broken_) return "most runs failed in the harness itself";
  return reason_;
}

}  // namespace gpufuzz
