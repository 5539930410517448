// PeriodicHookTest.cpp: a campaign calls its periodic hook (what rewrites the HTML report) every
// `periodicEvery` while it runs, on a thread of its own; a hook that throws, or that is slow,
// neither stops the campaign nor delays its end by more than the call under way; one not yet
// due does not hold the campaign's end.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "harness/campaign/Campaign.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

using namespace std::chrono_literals;

CampaignPlan quickPlan(std::chrono::seconds time) {
  CampaignPlan plan;
  plan.seed = 1;
  plan.runs.reset();
  plan.time = time;
  plan.grace = 0s;
  plan.jobs = 2;
  plan.quiet = true;
  plan.explain = false;
  plan.stopRequested = [] { return false; };
  return plan;
}

TEST(PeriodicHook, IsCalledEveryPeriodWhileTheCampaignRuns) {
  testing::SimTrials trials(TeardownPolicy::Shipped, "none");
  testing::ScratchDir dir;
  FindingStore store(dir.path() / "findings");
  CampaignPlan plan = quickPlan(4s);
  plan.periodicEvery = 1s;
  std::atomic<int> calls{0};
  plan.periodic = [&] {
    ++calls;
    if (calls == 1) throw std::runtime_error("a report that failed");
  };
  const auto started = std::chrono::steady_clock::now();
  const CampaignResult result = runCampaign(plan, trials.runner, store);
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_FALSE(result.harnessBroken);
  // About one call a second over four seconds; the first one threw and the others still came.
  EXPECT_GE(calls.load(), 2);
  EXPECT_LE(calls.load(), 5);
  EXPECT_LT(took, 15s);
}

TEST(PeriodicHook, ASlowCallDelaysTheEndByNoMoreThanItself) {
  testing::SimTrials trials(TeardownPolicy::Shipped, "none");
  testing::ScratchDir dir;
  FindingStore store(dir.path() / "findings");
  CampaignPlan plan = quickPlan(2s);
  plan.periodicEvery = 1s;
  std::atomic<int> calls{0};
  plan.periodic = [&] {
    ++calls;
    std::this_thread::sleep_for(1500ms);
  };
  const auto started = std::chrono::steady_clock::now();
  runCampaign(plan, trials.runner, store);
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_GE(calls.load(), 1);
  EXPECT_LT(took, 10s);
}

TEST(PeriodicHook, AHookNotYetDueDoesNotHoldTheEnd) {
  testing::SimTrials trials(TeardownPolicy::Shipped, "none");
  testing::ScratchDir dir;
  FindingStore store(dir.path() / "findings");
  CampaignPlan plan = quickPlan(1s);
  plan.periodicEvery = std::chrono::hours(1);
  std::atomic<int> calls{0};
  plan.periodic = [&] { ++calls; };
  const auto started = std::chrono::steady_clock::now();
  runCampaign(plan, trials.runner, store);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s) << "the wait was not cut short";
  EXPECT_EQ(calls.load(), 0);
}

}  // namespace
}  // namespace gpufuzz
