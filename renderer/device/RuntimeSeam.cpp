// RuntimeSeam.cpp: this thread's armed failure at the runtime-call seam.
#include "renderer/device/RuntimeSeam.h"

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

}  // namespace gpufuzz::seam
