// FaultInjector.h: the interceptor that makes a device misbehave as a fault plan says.
//
// Contract: at every call the Device seam offers, the first rule of the plan that matches (file
// order) applies its effect to that call, every time it matches:
//   hang      blocks the calling thread forever in pause(), at ~0% CPU; signals with a default
//             action (SIGTERM, SIGKILL) still end the process
//   spin      busy-loops forever on the calling thread
//   crash     kills the process by SIGSEGV inside the call, whatever SIGSEGV handler was set
//   error     throws DeviceError naming the call and the rule
//   corrupt   returns Alteration{corrupt}; the seam alters the call's bytes
//   leak      returns Alteration{leak}; the seam never returns the memory to the backend
//   delay=MS  sleeps MS milliseconds, then lets the call proceed
// Before hanging, spinning or crashing it writes one line to stderr naming the call and the rule,
// since the process will say nothing else. A hang, spin or delay first leaves the threads'
// schedule (Turns.h), so the other threads go on. Thread-safe: the observer is called from the
// thread whose call the rule fired in.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "renderer/device/Device.h"
#include "renderer/faults/FaultPlan.h"

namespace gpufuzz {

class FaultInjector : public Interceptor {
 public:
  /// Told of every rule that fires, before its effect is applied (so it is told even when the
  /// effect never returns).
  using FiredObserver =
      std::function<void(const FaultRule& rule, const CallSite& site, const CounterSnapshot&)>;

  explicit FaultInjector(FaultPlan plan);
  // lastFired() points into the plan this injector owns.
  FaultInjector(const FaultInjector&) = delete;
  FaultInjector& operator=(const FaultInjector&) = delete;

  Alteration before(const CallSite& site, const CounterSnapshot& counters) override;

  void setFiredObserver(FiredObserver observer) { observer_ = std::move(observer); }

  const FaultPlan& plan() const { return plan_; }
  /// The rule that fired most recently, or nullptr if none has.
  const FaultRule* lastFired() const { return lastFired_.load(); }

  /// The conditions of a rule whose sets nearest() tells: its first five.
  static constexpr std::size_t kNearConditions = 5;
  /// For each rule with conditions, in file order: which sets of its conditions held together at
  /// one call at its point since resetNearest(), bit S for the set S (bit c of S: condition c).
  /// Guided search steers by it (docs/search.md).
  std::vector<uint32_t> nearest() const;
  /// For each rule, in file order, and each of its first five conditions: the largest value its
  /// counter had at a call at the rule's point, up to the condition's threshold (for >= and >;
  /// 0 for the others). Counts that climb toward a threshold steer guided search.
  std::vector<std::array<uint64_t, kNearConditions>> reached() const;
  void resetNearest();

 private:
  FaultPlan plan_;
  FiredObserver observer_;
  std::atomic<const FaultRule*> lastFired_ = nullptr;
  std::unique_ptr<std::atomic<uint32_t>[]> nearest_;
  std::unique_ptr<std::atomic<uint64_t>[]> reached_;  // rules x kNearConditions
};

}  // namespace gpufuzz
