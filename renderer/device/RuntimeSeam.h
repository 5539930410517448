// RuntimeSeam.h: where a call into CUDA, OpenCL or Vulkan is made to fail on purpose
// (docs/failures.md). Each runtime's table of entry points (CudaDriver, OpenClApi, vk::InstanceApi)
// holds wrappers made here: a wrapper asks this thread's armed failure first, and when its call is
// the N-th of the thread that can fail that way, it returns the runtime's error for it without
// reaching the runtime. Otherwise it calls the runtime's own entry point.
//
// Release entry points are never wrapped: a release that never reaches the runtime would leak by
// construction. Queries that the harness makes to check a run (clGetEventInfo, vkGetFenceStatus
// after a wait) are wrapped only where the runtime's specification lets them fail that way.
//
// The renderer's models arm the Device seam instead (Device::arm), which counts the renderer's
// device calls on every backend and on sim; the runtime models' executors arm this one.
//
// Every entry point of the tables goes through here, failable or not, and is the threads'
// scheduling point on real runtimes (docs/sequences.md, Threads on real runtimes): a call counts
// (callCounts), takes its turn in the thread's schedule (Turns.h), and lets go of the caller's
// StateLock while it is inside the runtime, so that other threads' calls overlap it.
#pragma once

#include <mutex>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "renderer/device/CallFailure.h"

namespace gpufuzz::seam {

/// The failure kinds one entry point can return, a bit per FailureKind.
using Kinds = uint8_t;
constexpr Kinds kindBit(FailureKind kind) {
  return static_cast<Kinds>(1u << static_cast<unsigned>(kind));
}
inline constexpr Kinds kOom = kindBit(FailureKind::DeviceMemory);
inline constexpr Kinds kHostOom = kindBit(FailureKind::HostMemory);
inline constexpr Kinds kLost = kindBit(FailureKind::DeviceLost);

/// A call the seam failed: which entry point, and how.
struct Fired {
  std::string call;
  FailureKind kind = FailureKind::DeviceMemory;
};

/// Until disarm() on this thread, the failure.nth-th call of this thread whose entry point can
/// fail with failure.kind returns that failure without reaching the runtime.
void arm(const CallFailure& failure);
/// Ends this thread's armed failure: the call that failed, or nothing when none came.
std::optional<Fired> disarm();

namespace detail {
struct Armed {
  bool on = false;
  CallFailure failure;
  uint32_t seen = 0;
  std::optional<Fired> fired;
};
Armed& armed();
/// Whether the call `name`, which can fail with `kinds`, is the armed one; counts it when it
/// can fail the armed way.
bool due(Kinds kinds, const char* name);
}  // namespace detail

/// Runtime calls made so far by this process, through the tables.
struct CallCounts {
  uint64_t calls = 0;
  /// Calls that began while another thread was inside a runtime call.
  uint64_t overlapped = 0;
};
CallCounts callCounts();

/// One runtime call from its entry to its return, on the calling thread: counted, scheduled, and
/// with the thread's StateLock let go meanwhile. A call made from inside another (a callback that
/// calls the runtime) is part of it.
class Inside {
 public:
  Inside();
  ~Inside();
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;

 private:
  std::mutex* released_ = nullptr;  // the StateLock's mutex it let go of
  bool outermost_ = false;
};

/// Holds `mutex`, which guards an executor's or a backend's own state, while the calling thread
/// runs an operation, but not while that thread is inside a runtime call: the state is the
/// harness's to keep consistent, the runtime's calls are the runtime's to race. Code under it may
/// find other threads' changes after each runtime call, never in the middle of its own steps.
class StateLock {
 public:
  explicit StateLock(std::mutex& mutex) : StateLock(&mutex) {}
  /// Holds nothing when `mutex` is null.
  explicit StateLock(std::mutex* mutex);
  ~StateLock();
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;

 private:
  std::mutex* mutex_;
  std::mutex* outer_;
};

/// While it lives, the calling thread's runtime calls keep its StateLock held, and are no
/// scheduling points: for the steps of an executor that hand the runtime what other threads'
/// operations may end meanwhile (an event or a queue another operation completes or releases),
/// or that walk state those operations change.
class KeepState {
 public:
  /// Keeps nothing when `on` is false: for steps that keep the state on some paths only.
  explicit KeepState(bool on = true);
  ~KeepState();
  KeepState(const KeepState&) = delete;
  KeepState& operator=(const KeepState&) = delete;

 private:
  bool on_;
};

/// A string as a template argument: an entry point's name in its wrapper's type.
template <std::size_t N>
struct Name {
  char text[N]{};
  constexpr Name(const char (&s)[N]) { std::copy_n(s, N, text); }  // NOLINT: implicit on purpose
};

/// The wrapper of one entry point. `Real()` is the table of the runtime's own entry points;
/// `Member` is the entry's member in it; `Errors::fail<R>(kind, args...)` makes the runtime's
/// answer for a failure of `kind` (the error code, a null handle with its error out-parameter).
template <typename Fn>
struct Entry;

template <typename R, typename... A>
struct Entry<R (*)(A...)> {
  template <typename Errors, auto Real, auto Member, Kinds Fails, Name CallName>
  static R call(A... args) {
    if constexpr (Fails != 0) {
      if (detail::armed().on && detail::due(Fails, CallName.text)) {
        return Errors::template fail<R>(detail::armed().failure.kind, args...);
      }
    }
    const Inside inside;
    return (Real().*Member)(args...);
  }
};

/// Errors of an entry point that never fails on purpose.
struct NoErrors {
  template <typename R, typename... A>
  static R fail(FailureKind /*kind*/, A... /*args*/) {
    return R{};
  }
};

/// Replaces `table.*Member` by its wrapper; an entry the runtime lacks stays null.
template <typename Errors, auto Real, auto Member, Kinds Fails, Name CallName, typename Table>
void wrap(Table& table) {
  using Fn = std::remove_reference_t<decltype(table.*Member)>;
  if (table.*Member == nullptr) return;
  table.*Member = &Entry<Fn>::template call<Errors, Real, Member, Fails, CallName>;
}

}  // namespace gpufuzz::seam
