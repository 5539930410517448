// Turns.h: which thread of a sequence (docs/sequences.md, Threads) makes a device call, and how the
// threads take turns at the device when a schedule orders them.
//
// A thread that runs operations of a threaded sequence says so with CallerThread; the seam
// reads its number (the fault plans' `thread` counter) and, when a schedule is set, asks it for
// a turn at every scheduling point. A call that blocks outside the device's control (a planted
// hang, spin or delay) leaves the schedule first, so the other threads go on. Without a
// schedule every function here but callerThread() does nothing.
#pragma once

#include <mutex>

namespace gpufuzz {

/// A schedule of threads that take turns: one runs at a time, and which one is its choice.
class Turns {
 public:
  virtual ~Turns() = default;
  /// A scheduling point of `thread`, which runs now: the schedule lets one thread run next.
  /// `inside`: the point inside a device call, once it has entered and before it acts.
  virtual void yield(unsigned thread, bool inside) = 0;
  /// `thread` is about to block in a call (a delay, a hang): the others run meanwhile.
  virtual void leave(unsigned thread) = 0;
  /// `thread` is back from such a block and waits for its turn.
  virtual void rejoin(unsigned thread) = 0;
};

/// Marks the calling thread as thread `thread` of the sequence, under `turns` (or none) while
/// it lives; the thread is 0 without a schedule again afterwards.
class CallerThread {
 public:
  CallerThread(unsigned thread, Turns* turns);
  ~CallerThread();
  CallerThread(const CallerThread&) = delete;
  CallerThread& operator=(const CallerThread&) = delete;
};

/// The calling thread's number: 0 outside a CallerThread.
unsigned callerThread();
/// A scheduling point of the calling thread: at a call's entry, or inside it.
void takeTurn(bool inside = false);
/// The calling thread is about to block, or is back from blocking.
void leaveTurns();
void rejoinTurns();
/// Locks `m`, a lock another thread of the sequence may hold across its scheduling points (an
/// object the runtime asks its caller to synchronize, an executor's state). Waiting for it leaves
/// the turns: the holder must run to let it go, or the schedule would wait a whole slice for it.
/// `Lock`: std::unique_lock or std::shared_lock of the mutex's type.
template <typename Lock = std::unique_lock<std::mutex>>
Lock lockOutsideTurns(typename Lock::mutex_type& m) {
  Lock lock(m, std::try_to_lock);
  if (lock.owns_lock()) return lock;
  leaveTurns();
  lock.lock();
  rejoinTurns();
  return lock;
}

}  // namespace gpufuzz
