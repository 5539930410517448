// ThreadLanes.cpp: a threaded sequence's threads, free or taking turns under a schedule.
#include "harness/runner/ThreadLanes.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "model/SplitMix.h"
#include "renderer/device/Turns.h"

namespace gpufuzz {

/// Threads that take turns, by probabilistic concurrency testing (PCT, Burckhardt et al. 2010):
/// each thread has a priority drawn from the seed, the thread of highest priority that can go
/// on runs, and at one or two points inside device calls, drawn from the seed (log-uniform over
/// the first 64), the running thread drops below every other. A race that needs one thread parked
/// inside a call while another runs many steps is then found with odds of about 1 in (threads x
/// calls), where a coin flipped at every point finds it about once in 2^steps. Half the seeds
/// change priorities once (races of one thread inside one call), the others twice. The first pick
/// waits until every thread has arrived, so that which threads exist never depends on timing.
class Schedule final : public Turns {
 public:
  /// `threads` threads, numbered as the file numbers them (`@T`); `changes`: 1 or 2.
  Schedule(std::size_t threads, uint64_t seed, int changes)
      : wants_(kMaxThreads, false),
        ready_(kMaxThreads),
        priority_(kMaxThreads, 0),
        threads_(threads),
        seed_(seed) {
    for (unsigned t = 0; t < kMaxThreads; ++t)
      priority_[t] = (splitmixNext(seed_) >> 8U) + kMaxThreads + 1;  // above every dropped one
    // Log-uniform over 1..2^kChangeBands, whatever the sequence's length: a shrink's candidates
    // keep the points their original's schedule changes at.
    for (int i = 0; i < changes; ++i) {
      const uint64_t band = 1 + splitmixNext(seed_) % kChangeBands;  // 1..6
      changes_.push_back(1 + splitmixNext(seed_) % (uint64_t{1} << band));
    }
  }

  /// Changes fall at points 1..2^kChangeBands inside device calls.
  static constexpr uint64_t kChangeBands = 6;

  /// A scheduling point at which `thread` goes on only once `ready` holds (always, if null).
  void waitFor(unsigned thread, std::function<bool()> ready, bool inside = false) {
    std::unique_lock lock(mutex_);
    wants_[thread] = true;
    ready_[thread] = std::move(ready);
    if (holder_ == static_cast<int>(thread) && inside &&
        std::find(changes_.begin(), changes_.end(), ++insides_) != changes_.end()) {
      priority_[thread] = dropped_--;  // below every other, the latest lowest
    }
    if (holder_ == static_cast<int>(thread) || holder_ < 0) pick();
    wake_[thread].wait(lock, [&] { return holder_ == static_cast<int>(thread); });
    wants_[thread] = false;
    ready_[thread] = nullptr;
  }
  /// The thread's first scheduling point.
  void arrive(unsigned thread) {
    {
      const std::lock_guard lock(mutex_);
      ++arrived_;
    }
    waitFor(thread, nullptr);
  }
  /// `thread` has finished: the others go on.
  void exit(unsigned thread) { leave(thread); }

  void yield(unsigned thread, bool inside) override { waitFor(thread, nullptr, inside); }
  void leave(unsigned thread) override {
    const std::lock_guard lock(mutex_);
    if (holder_ == static_cast<int>(thread)) pick();
  }
  void rejoin(unsigned thread) override { waitFor(thread, nullptr); }

 private:
  /// Hands the turn to one of the threads that can go on, or to none (then the next thread to
  /// arrive or rejoin picks). mutex_ held.
  void pick() {
    holder_ = -1;
    if (arrived_ < threads_) return;
    int best = -1;
    for (unsigned t = 0; t < wants_.size(); ++t) {
      if (!wants_[t] || (ready_[t] && !ready_[t]())) continue;
      if (best < 0 || priority_[t] > priority_[static_cast<std::size_t>(best)]) {
        best = static_cast<int>(t);
      }
    }
    if (best < 0) return;
    holder_ = best;
    // Only the thread picked wakes: the others would find it is not their turn.
    wake_[static_cast<std::size_t>(best)].notify_one();
  }

  std::mutex mutex_;
  std::array<std::condition_variable, kMaxThreads> wake_;
  std::vector<bool> wants_;
  std::vector<std::function<bool()>> ready_;
  std::vector<uint64_t> priority_;
  std::vector<uint64_t> changes_;
  uint64_t insides_ = 0;
  uint64_t dropped_ = kMaxThreads;
  std::size_t threads_;
  std::size_t arrived_ = 0;
  int holder_ = -1;
  uint64_t seed_;
};

struct ThreadLanes::State {
  std::vector<std::vector<std::size_t>> waits;
  std::map<unsigned, std::vector<std::size_t>> lanes;
  std::unique_ptr<Schedule> schedule;
  std::unique_ptr<std::atomic<bool>[]> done;
  std::atomic<bool> stopped = false;
  Step step;

  std::mutex mutex;
  std::condition_variable changed;
  bool go = false;
  bool ran = false;  // run() was called
  std::vector<std::thread> threads;

  explicit State(const Sequence& s) : waits(threadWaits(s)) {}

  bool mayBegin(std::size_t i) const {
    if (stopped.load()) return true;
    for (const std::size_t w : waits[i]) {
      if (!done[w].load()) return false;
    }
    return true;
  }

  void lane(unsigned thread, const std::vector<std::size_t>& indexes) {
    {
      std::unique_lock lock(mutex);
      changed.wait(lock, [&] { return go; });
    }
    const CallerThread caller(thread, schedule.get());
    if (schedule) schedule->arrive(thread);
    for (const std::size_t i : indexes) {
      if (schedule) {
        schedule->waitFor(thread, [this, i] { return mayBegin(i); });
      } else {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return mayBegin(i); });
      }
      if (stopped.load()) break;
      const bool ok = step(i);
      {
        const std::lock_guard lock(mutex);
        if (ok) {
          done[i].store(true);
        } else {
          stopped.store(true);
        }
      }
      changed.notify_all();
      if (!ok) break;
    }
    if (schedule) schedule->exit(thread);
  }
};

ThreadLanes::ThreadLanes(const Sequence& seq, std::optional<uint64_t> scheduleSeed)
    : state_(std::make_unique<State>(seq)) {
  State& s = *state_;
  s.done = std::make_unique<std::atomic<bool>[]>(seq.ops.size());
  for (std::size_t i = 0; i < seq.ops.size(); ++i)
    s.lanes[seq.ops[i].thread].push_back(i);
  if (scheduleSeed) {
    s.schedule = std::make_unique<Schedule>(s.lanes.size(), *scheduleSeed,
                                            (*scheduleSeed & 1U) != 0 ? 2 : 1);
  }
  // The first lane runs on the thread that calls run(): one thread fewer to make and wake.
  for (auto it = std::next(s.lanes.begin()); it != s.lanes.end(); ++it) {
    s.threads.emplace_back(
        [&s, thread = it->first, &indexes = it->second] { s.lane(thread, indexes); });
  }
}

ThreadLanes::~ThreadLanes() {
  {
    const std::lock_guard lock(state_->mutex);
    state_->go = true;
    state_->stopped.store(true);
  }
  state_->changed.notify_all();
  // Never run: the first lane still arrives (and stops at once), or the others wait for it.
  if (!state_->ran && !state_->lanes.empty()) {
    const auto& [thread, indexes] = *state_->lanes.begin();
    state_->lane(thread, indexes);
  }
  for (std::thread& t : state_->threads) {
    if (t.joinable()) t.join();
  }
}

void ThreadLanes::run(Step step) {
  state_->ran = true;
  state_->step = std::move(step);
  {
    const std::lock_guard lock(state_->mutex);
    state_->go = true;
  }
  state_->changed.notify_all();
  if (!state_->lanes.empty()) {
    const auto& [thread, indexes] = *state_->lanes.begin();
    state_->lane(thread, indexes);
  }
  for (std::thread& t : state_->threads) {
    if (t.joinable()) t.join();
  }
}

uint64_t scheduleSeed(const Sequence& seq, uint64_t attempt) {
  uint64_t state = seq.directives.seed.value_or(0);
  state = splitmixNext(state) ^ attempt;
  return splitmixNext(state);
}

}  // namespace gpufuzz
