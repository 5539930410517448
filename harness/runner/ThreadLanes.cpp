// ThreadLanes.cpp: a threaded sequence's threads, free or taking turns under a schedule.
#include "harness/runner/ThreadLanes.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
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
///
/// `collide` adds one to three points, drawn alike, where the running thread waits at a barrier
/// until another thread reaches its next call: both then enter the runtime together, and the
/// first of them back hands the turn to the other. On a real runtime a thread may block where
/// the schedule cannot see (a wait for the device, a lock of the runtime's): a thread that holds
/// the turn for longer than a slice without reaching a scheduling point loses it, and the others
/// go on meanwhile.
class Schedule final : public Turns {
 public:
  /// `threads` threads, numbered as the file numbers them (`@T`); `changes`: 1 or 2.
  Schedule(std::size_t threads, const ScheduleChoice& choice, int changes)
      : wants_(kMaxThreads, false),
        ready_(kMaxThreads),
        priority_(kMaxThreads, 0),
        threads_(threads),
        seed_(choice.seed) {
    for (unsigned t = 0; t < kMaxThreads; ++t)
      priority_[t] = (splitmixNext(seed_) >> 8U) + kMaxThreads + 1;  // above every dropped one
    // Log-uniform over 1..2^kChangeBands, whatever the sequence's length: a shrink's candidates
    // keep the points their original's schedule changes at.
    for (int i = 0; i < changes; ++i)
      changes_.push_back(drawPoint());
    if (choice.collide) {
      const uint64_t collisions = 1 + splitmixNext(seed_) % 3;
      for (uint64_t i = 0; i < collisions; ++i)
        collisions_.push_back(drawPoint());
    }
    if (choice.slice.count() > 0) {
      slice_ = choice.slice;
      watchdog_ = std::thread([this] { watch(); });
    }
  }
  ~Schedule() override {
    if (!watchdog_.joinable()) return;
    {
      const std::lock_guard lock(mutex_);
      ended_ = true;
    }
    watched_.notify_all();
    watchdog_.join();
  }
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;

  /// Changes fall at points 1..2^kChangeBands inside device calls.
  static constexpr uint64_t kChangeBands = 6;

  /// A scheduling point at which `thread` goes on only once `ready` holds (always, if null).
  void waitFor(unsigned thread, std::function<bool()> ready, bool inside = false) {
    std::unique_lock lock(mutex_);
    wants_[thread] = true;
    ready_[thread] = std::move(ready);
    const int me = static_cast<int>(thread);
    if (partner_ >= 0 && (holder_ == me || partner_ == me)) {
      // Back from a collision first: the other of the pair runs on alone.
      if (holder_ == me) holder_ = partner_;
      partner_ = -1;
      since_ = Clock::now();
    } else if (holder_ == me && inside) {
      ++insides_;
      if (std::find(changes_.begin(), changes_.end(), insides_) != changes_.end()) {
        priority_[thread] = dropped_--;  // below every other, the latest lowest
      }
      if (parked_ >= 0 && parked_ != me) {
        // The partner of a thread waiting at the barrier: both go into their calls.
        holder_ = parked_;
        partner_ = me;
        parked_ = -1;
        since_ = Clock::now();
        atGate_[thread] = true;
        atGate_[static_cast<std::size_t>(holder_)] = true;
        gate_.store(2);
        wake_[static_cast<std::size_t>(holder_)].notify_one();
      } else {
        // A collision waits for a point where another thread can go on: one drawn while the
        // others wait for this thread's operations would meet nobody.
        if (std::find(collisions_.begin(), collisions_.end(), insides_) != collisions_.end())
          ++pendingCollisions_;
        if (pendingCollisions_ > 0 && parked_ < 0 && anotherCanGo(me)) {
          --pendingCollisions_;
          parked_ = me;
        }
        pick();
      }
    } else if (holder_ == me || holder_ < 0) {
      pick();
    }
    wake_[thread].wait(lock, [&] { return holder_ == me || partner_ == me; });
    wants_[thread] = false;
    ready_[thread] = nullptr;
    if (!atGate_[thread]) return;
    atGate_[thread] = false;
    lock.unlock();
    // A collision's pair leaves together: the one that did not sleep waits, awake, for the one
    // that did, so that their calls meet inside the runtime rather than one after the other.
    // A spin, not a yield: a yield's own latency would let the first call end first.
    gate_.fetch_sub(1);
    const auto until = Clock::now() + std::chrono::milliseconds(2);
    while (gate_.load() > 0) {
      if (Clock::now() > until) std::this_thread::yield();
    }
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
    giveUp(static_cast<int>(thread));
  }
  void rejoin(unsigned thread) override { waitFor(thread, nullptr); }

 private:
  using Clock = std::chrono::steady_clock;

  uint64_t drawPoint() {
    const uint64_t band = 1 + splitmixNext(seed_) % kChangeBands;  // 1..6
    return 1 + splitmixNext(seed_) % (uint64_t{1} << band);
  }

  /// Whether a thread other than `me` waits for a turn and can go on. mutex_ held.
  bool anotherCanGo(int me) const {
    for (unsigned t = 0; t < wants_.size(); ++t) {
      if (static_cast<int>(t) != me && wants_[t] && (!ready_[t] || ready_[t]())) return true;
    }
    return false;
  }

  /// `thread` stops running without waiting for a turn (it left, finished or blocked). mutex_
  /// held.
  void giveUp(int thread) {
    if (partner_ == thread) {
      partner_ = -1;
    } else if (holder_ == thread && partner_ >= 0) {
      holder_ = partner_;
      partner_ = -1;
    } else if (holder_ == thread) {
      pick();
    }
    // A thread that ran out of turn (a collision's partner, one that lost a slice) may have
    // made another ready as it went: with no holder, nobody else would see it.
    if (holder_ < 0) pick();
  }

  /// Hands the turn to one of the threads that can go on, or to none (then the next thread to
  /// arrive or rejoin picks). A thread parked at a collision's barrier waits for another; with
  /// none to come, it goes on alone. mutex_ held.
  void pick() {
    holder_ = -1;
    since_ = Clock::now();
    if (arrived_ < threads_) return;
    int best = -1;
    for (unsigned t = 0; t < wants_.size(); ++t) {
      if (static_cast<int>(t) == parked_) continue;
      if (!wants_[t] || (ready_[t] && !ready_[t]())) continue;
      if (best < 0 || priority_[t] > priority_[static_cast<std::size_t>(best)]) {
        best = static_cast<int>(t);
      }
    }
    if (best < 0 && parked_ >= 0) {
      best = parked_;
      parked_ = -1;
    }
    if (best < 0) return;
    holder_ = best;
    // Only the thread picked wakes: the others would find it is not their turn.
    wake_[static_cast<std::size_t>(best)].notify_one();
  }

  /// The slice's watch: a holder that reaches no scheduling point for a slice is blocked where
  /// the schedule cannot see, and the others go on.
  void watch() {
    std::unique_lock lock(mutex_);
    while (!ended_) {
      watched_.wait_for(lock, slice_ / 4);
      if (ended_) break;
      // No holder: a thread that ran out of turn may have made another ready meanwhile.
      if (holder_ < 0) {
        pick();
        continue;
      }
      if (Clock::now() - since_ < slice_) continue;
      partner_ = -1;
      if (parked_ == holder_) parked_ = -1;
      pick();
    }
  }

  std::mutex mutex_;
  std::array<std::condition_variable, kMaxThreads> wake_;
  std::vector<bool> wants_;
  std::vector<std::function<bool()>> ready_;
  std::vector<uint64_t> priority_;
  std::vector<uint64_t> changes_;
  std::vector<uint64_t> collisions_;
  uint64_t insides_ = 0;
  uint64_t pendingCollisions_ = 0;  // drawn, waiting for a point where another can go on
  uint64_t dropped_ = kMaxThreads;
  std::size_t threads_;
  std::size_t arrived_ = 0;
  int holder_ = -1;
  int partner_ = -1;                        // with holder_, in a collision
  int parked_ = -1;                         // waiting at a collision's barrier
  std::array<bool, kMaxThreads> atGate_{};  // released by a collision, not yet through its gate
  std::atomic<int> gate_{0};                // the collision's threads not yet through its gate
  uint64_t seed_;
  std::chrono::milliseconds slice_{0};
  Clock::time_point since_ = Clock::now();
  bool ended_ = false;
  std::condition_variable watched_;
  std::thread watchdog_;
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

ThreadLanes::ThreadLanes(const Sequence& seq, std::optional<ScheduleChoice> schedule)
    : state_(std::make_unique<State>(seq)) {
  State& s = *state_;
  s.done = std::make_unique<std::atomic<bool>[]>(seq.ops.size());
  for (std::size_t i = 0; i < seq.ops.size(); ++i)
    s.lanes[seq.ops[i].thread].push_back(i);
  if (schedule) {
    s.schedule =
        std::make_unique<Schedule>(s.lanes.size(), *schedule, (schedule->seed & 1U) != 0 ? 2 : 1);
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

std::optional<ScheduleChoice> runtimeSchedule(ScheduleMode mode, const Sequence& seq,
                                              uint64_t attempt) {
  const ScheduleMode now = scheduleOfTry(mode, seq.directives.seed, attempt);
  if (now == ScheduleMode::Os) return std::nullopt;
  // A slice well above a call that returns at once, well below a deadline: a blocked thread
  // costs its partners this long, a few times a run at most.
  constexpr std::chrono::milliseconds kSlice{20};
  return ScheduleChoice{scheduleSeed(seq, attempt), now == ScheduleMode::Collide, kSlice};
}

}  // namespace gpufuzz
