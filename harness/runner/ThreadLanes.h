// ThreadLanes.h: the threads of a threaded sequence (docs/sequences.md, Threads), in the runner.
//
// Each `@T` of the file is a thread of this process, made and waiting before the sequence's
// `start` and released together by run(). A thread runs its operations in file order; an
// operation begins once the operations it waits for (threadWaits) are done; after a failure
// nothing new begins, and run() returns once every thread has finished what it began.
//
// With a schedule (sim, and pct or collide on a real runtime), the threads take turns (Turns.h):
// one runs at a time, and at each scheduling point (every device call's entry and its inside, every
// wait for an operation's turn) the schedule picks the next among the threads that can go on, by a
// generator seeded with the seed. Without a `delay=` the run is then the same every time for one
// seed. A thread that blocks in a planted hang, spin or delay leaves the schedule meanwhile.
// Without a seed the threads run freely, as real work does.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "model/Schedule.h"
#include "model/Sequence.h"

namespace gpufuzz {

class Schedule;

/// How the threads take turns: a PCT schedule of `seed`, with collisions or not; a positive
/// `slice` lets a thread blocked out of the schedule's sight lose its turn (real runtimes).
struct ScheduleChoice {
  uint64_t seed = 0;
  bool collide = false;
  std::chrono::milliseconds slice{0};
};

class ThreadLanes {
 public:
  /// Runs operation `index` (its begin, the call and its done); false when it failed.
  using Step = std::function<bool(std::size_t index)>;

  /// The threads, made and waiting.
  ThreadLanes(const Sequence& seq, std::optional<ScheduleChoice> schedule);
  ~ThreadLanes();
  ThreadLanes(const ThreadLanes&) = delete;
  ThreadLanes& operator=(const ThreadLanes&) = delete;

  /// Releases the threads, each calling `step` for its operations on its turn; returns once
  /// every thread has finished.
  void run(Step step);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// The schedule seed of try `attempt` of a sequence: from the try and its `# seed:`, not its
/// operations, so that a shrink's candidates meet the schedule their original failed in, and a
/// finding's file replays the schedules its rate was measured over.
uint64_t scheduleSeed(const Sequence& seq, uint64_t attempt);

/// The schedule of try `attempt` of `seq` on a real runtime under `mode` (docs/sequences.md,
/// Threads on real runtimes): none for os.
std::optional<ScheduleChoice> runtimeSchedule(ScheduleMode mode, const Sequence& seq,
                                              uint64_t attempt);

}  // namespace gpufuzz
