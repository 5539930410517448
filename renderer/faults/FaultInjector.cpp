// FaultInjector.cpp: the effects of fault-plan rules, made real.
#include "renderer/faults/FaultInjector.h"

#include <algorithm>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "renderer/device/Turns.h"

namespace gpufuzz {

namespace {

// One write(2), so the line arrives whole even if the process is killed right after.
void announce(std::string_view verb, const CallSite& site, const FaultPlan& plan,
              const FaultRule& rule) {
  const std::string line = "gpufuzz: fault plan " + std::string(verb) + " " +
                           std::string(callPointName(site.point)) + " (" + plan.cite(rule) + ")\n";
  std::string_view rest = line;
  while (!rest.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, rest.data(), rest.size());
    if (n <= 0) break;
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

// The seed's hang: a wait nothing will ever complete, costing no CPU.
[[noreturn]] void hangForever() {
  for (;;) {
    ::pause();
  }
}

[[noreturn]] void spinForever() {
  volatile uint64_t turns = 0;
  for (;;) {
    turns = turns + 1;
  }
}

// A real invalid access, so the death looks like the ones the harness must classify; a handler
// the program installed (a crash reporter) must not turn it into something else.
[[noreturn]] void crashBySegv() {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGSEGV, &dfl, nullptr);
  sigset_t segv;
  ::sigemptyset(&segv);
  ::sigaddset(&segv, SIGSEGV);
  ::pthread_sigmask(SIG_UNBLOCK, &segv, nullptr);

  int* volatile nowhere = nullptr;  // volatile: the compiler cannot prove the store faults
  *nowhere = 1;
  ::raise(SIGSEGV);
  std::abort();
}

}  // namespace

FaultInjector::FaultInjector(FaultPlan plan)
    : plan_(std::move(plan)),
      nearest_(std::make_unique<std::atomic<uint32_t>[]>(plan_.rules.size())),
      reached_(std::make_unique<std::atomic<uint64_t>[]>(plan_.rules.size() * kNearConditions)) {}

std::vector<uint32_t> FaultInjector::nearest() const {
  std::vector<uint32_t> most(plan_.rules.size());
  for (std::size_t r = 0; r < most.size(); ++r)
    most[r] = nearest_[r].load(std::memory_order_relaxed);
  return most;
}

std::vector<std::array<uint64_t, FaultInjector::kNearConditions>> FaultInjector::reached() const {
  std::vector<std::array<uint64_t, kNearConditions>> most(plan_.rules.size());
  for (std::size_t r = 0; r < most.size(); ++r) {
    for (std::size_t c = 0; c < kNearConditions; ++c)
      most[r][c] = reached_[r * kNearConditions + c].load(std::memory_order_relaxed);
  }
  return most;
}

void FaultInjector::resetNearest() {
  for (std::size_t r = 0; r < plan_.rules.size(); ++r) {
    nearest_[r].store(0, std::memory_order_relaxed);
    for (std::size_t c = 0; c < kNearConditions; ++c)
      reached_[r * kNearConditions + c].store(0, std::memory_order_relaxed);
  }
}

Alteration FaultInjector::before(const CallSite& site, const CounterSnapshot& counters) {
  for (std::size_t r = 0; r < plan_.rules.size(); ++r) {
    const FaultRule& candidate = plan_.rules[r];
    if (candidate.point != site.point || candidate.conditions.empty()) continue;
    // Which of its first five conditions hold: a set, one bit of the 32 that nearest_ keeps.
    uint32_t held = 0;
    for (std::size_t c = 0; c < candidate.conditions.size() && c < kNearConditions; ++c) {
      const Condition& condition = candidate.conditions[c];
      if (condition.holds(counters)) held |= 1U << c;
      if (condition.cmp != Comparison::Ge && condition.cmp != Comparison::Gt) continue;
      const uint64_t cap = condition.value + (condition.cmp == Comparison::Gt ? 1 : 0);
      const uint64_t value = std::min(counters[condition.counter], cap);
      std::atomic<uint64_t>& most = reached_[r * kNearConditions + c];
      uint64_t seen = most.load(std::memory_order_relaxed);
      while (value > seen && !most.compare_exchange_weak(seen, value)) {
      }
    }
    nearest_[r].fetch_or(1U << held, std::memory_order_relaxed);
  }
  const FaultRule* rule = plan_.firstMatch(site.point, counters);
  if (rule == nullptr) return {};
  lastFired_.store(rule);
  if (observer_) observer_(*rule, site, counters);

  switch (rule->effect) {
    case Effect::Hang:
      announce("hangs", site, plan_, *rule);
      leaveTurns();
      hangForever();
    case Effect::Spin:
      announce("spins in", site, plan_, *rule);
      leaveTurns();
      spinForever();
    case Effect::Crash:
      announce("crashes", site, plan_, *rule);
      crashBySegv();
    case Effect::Error:
      throw DeviceError(site.point, std::string(callPointName(site.point)) +
                                        " failed: injected fault (" + plan_.cite(*rule) + ")");
    case Effect::Corrupt:
      return Alteration{.corrupt = true, .leak = false};
    case Effect::Leak:
      return Alteration{.corrupt = false, .leak = true};
    case Effect::Delay:
      leaveTurns();
      std::this_thread::sleep_for(std::chrono::milliseconds(rule->delayMs));
      rejoinTurns();
      return {};
  }
  return {};
}

}  // namespace gpufuzz
