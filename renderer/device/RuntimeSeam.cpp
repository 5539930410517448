// RuntimeSeam.cpp: this thread's armed failure at the runtime-call seam.
#include "renderer/device/RuntimeSeam.h"

#include <atomic>

#include "renderer/device/Turns.h"

namespace gpufuzz::seam {

namespace detail {

Armed& armed() {
  thread_local Armed state;
  return state;
}

bool due(Kinds kinds, const char* name) {
  Armed& a = armed();
  if (a.fired || (kinds & kindBit(a.failure.kind)) == 0) return false;
  if (++a.seen != a.failure.nth) return false;
  a.fired = Fired{name, a.failure.kind};
  return true;
}

}  // namespace detail

void arm(const CallFailure& failure) {
  detail::armed() = detail::Armed{true, failure, 0, {}};
}

std::optional<Fired> disarm() {
  detail::Armed& a = detail::armed();
  std::optional<Fired> fired = std::move(a.fired);
  a = detail::Armed{};
  return fired;
}

namespace {
std::atomic<uint64_t> gCalls{0};
std::atomic<uint64_t> gOverlapped{0};
std::atomic<uint32_t> gInside{0};
/// How deep the calling thread is in runtime calls; the StateLock it holds, if any.
thread_local uint32_t tDepth = 0;
thread_local std::mutex* tState = nullptr;
thread_local uint32_t tKeep = 0;
}  // namespace

CallCounts callCounts() {
  return {gCalls.load(std::memory_order_relaxed), gOverlapped.load(std::memory_order_relaxed)};
}

Inside::Inside() {
  if (tDepth++ != 0) return;
  outermost_ = true;
  if (tKeep == 0) {
    // Let go first: a thread waiting for its turn must not hold up the threads that run.
    released_ = tState;
    if (released_ != nullptr) released_->unlock();
    takeTurn(/*inside=*/true);
  }
  gCalls.fetch_add(1, std::memory_order_relaxed);
  if (gInside.fetch_add(1, std::memory_order_acq_rel) != 0) {
    gOverlapped.fetch_add(1, std::memory_order_relaxed);
  }
}

Inside::~Inside() {
  --tDepth;
  if (!outermost_) return;
  gInside.fetch_sub(1, std::memory_order_acq_rel);
  if (released_ != nullptr) released_->lock();
}

KeepState::KeepState(bool on) : on_(on) {
  if (on_) ++tKeep;
}

KeepState::~KeepState() {
  if (on_) --tKeep;
}

StateLock::StateLock(std::mutex* mutex) : mutex_(mutex), outer_(tState) {
  if (mutex_ == nullptr) return;
  mutex_->lock();
  tState = mutex_;
}

StateLock::~StateLock() {
  if (mutex_ == nullptr) return;
  tState = outer_;
  mutex_->unlock();
}

}  // namespace gpufuzz::seam
