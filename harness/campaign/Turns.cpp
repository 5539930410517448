// Turns.cpp: the shrink's turns and the examiner's queue.
#include "harness/campaign/Turns.h"

#include "harness/campaign/ExamineOrder.h"

namespace gpufuzz {

namespace {

/// The grace's last 1/kConfirmingShareOfGrace confirms the shrinks under way; none starts then.
constexpr int kConfirmingShareOfGrace = 5;

/// The end of a shrink's turn begun at `began`: its even share of the window left then, split
/// with `waiting` other causes.
Turns::Clock::time_point turnEnd(Turns::Clock::time_point began, Turns::Clock::time_point windowEnd,
                                 std::size_t waiting) {
  return began + (windowEnd - began) / static_cast<Turns::Clock::rep>(waiting + 1);
}

}  // namespace

Turns::Turns(const FindingStore& store, const Stops& stops, bool persistent,
             std::optional<Clock::time_point> deadline, std::chrono::seconds grace)
    : store_(store), stops_(stops), persistent_(persistent), deadline_(deadline), grace_(grace) {}

Turns::Shrink Turns::takeShrinkInTurn(bool newSite) {
  {
    std::unique_lock lock(mutex_);
    if (newSite) {
      ++newSitesWaiting_;
    } else {
      while (newSitesWaiting_ > 0 && !stops_.requested())
        turn_.wait_for(lock, std::chrono::milliseconds(50));
    }
    turn_.wait(lock, [this] { return !shrinkHeld_; });
    shrinkHeld_ = true;
    if (!newSite) return Shrink(*this);
    --newSitesWaiting_;
  }
  turn_.notify_all();
  return Shrink(*this);
}

Turns::Shrink Turns::takeShrink() {
  std::unique_lock lock(mutex_);
  turn_.wait(lock, [this] { return !shrinkHeld_; });
  shrinkHeld_ = true;
  return Shrink(*this);
}

void Turns::releaseShrink() {
  {
    std::lock_guard lock(mutex_);
    shrinkHeld_ = false;
  }
  turn_.notify_all();
}

bool Turns::queueOrExamine(const std::function<QueuedFailure()>& make) {
  std::unique_lock lock(mutex_);
  while (examinerActive_) {
    if (queued_.size() < kMostQueued) {
      queued_.push_back(make());
      return true;
    }
    turn_.wait_for(lock, std::chrono::milliseconds(50));
  }
  examinerActive_ = true;
  return false;
}

std::optional<QueuedFailure> Turns::next() {
  std::optional<QueuedFailure> q;
  {
    std::lock_guard lock(mutex_);
    if (queued_.empty()) {
      examinerActive_ = false;
    } else {
      std::vector<WaitingFailure> waiting;
      waiting.reserve(queued_.size());
      for (const QueuedFailure& f : queued_) {
        waiting.push_back(
            {f.triaged.examinedAs(f.t.outcome), f.triaged.newSite, f.triaged.variant});
      }
      const auto it =
          queued_.begin() + static_cast<std::ptrdiff_t>(nextToExamine(waiting, examinedAs_));
      q = std::move(*it);
      queued_.erase(it);
    }
  }
  // Room in the queue, or the examiner's place free: a worker waiting for either goes on.
  turn_.notify_all();
  return q;
}

std::vector<QueuedFailure> Turns::endExaminer() {
  std::vector<QueuedFailure> left;
  {
    std::lock_guard lock(mutex_);
    examinerActive_ = false;
    left.assign(std::make_move_iterator(queued_.begin()), std::make_move_iterator(queued_.end()));
    queued_.clear();
  }
  turn_.notify_all();
  return left;
}

void Turns::examining(const std::string& as) {
  std::lock_guard lock(mutex_);
  examinedAs_.insert(as);
}

std::size_t Turns::queued() const {
  std::lock_guard lock(mutex_);
  return queued_.size();
}

std::function<bool()> Turns::turnOver(const std::string& cause) {
  if (!persistent_ || !deadline_) return {};
  const Clock::time_point began = Clock::now();
  const Clock::time_point windowEnd = shrinkWindowEnd();
  if (began >= windowEnd) return {};
  return [this, cause, began, windowEnd] {
    const std::size_t waiting = causesQueued(cause);
    return waiting > 0 && Clock::now() >= turnEnd(began, windowEnd, waiting);
  };
}

std::size_t Turns::causesQueued(const std::string& shrinking) const {
  std::lock_guard lock(mutex_);
  if (queued_.empty()) return 0;
  const auto known = store_.causes();
  std::set<std::string> causes;
  for (const QueuedFailure& q : queued_) {
    if (q.triaged.variant || known.contains(q.triaged.cause)) continue;
    causes.insert(q.triaged.examinedAs(q.t.outcome));
  }
  causes.erase(shrinking);
  return causes.size();
}

Turns::Clock::time_point Turns::shrinkWindowEnd() const {
  return *deadline_ + grace_ - grace_ / kConfirmingShareOfGrace;
}

}  // namespace gpufuzz
