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
#pragma once

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
    if (detail::armed().on && detail::due(Fails, CallName.text)) {
      return Errors::template fail<R>(detail::armed().failure.kind, args...);
    }
    return (Real().*Member)(args...);
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
