// RuleMatchingTests.cpp: which rule fires: conditions ANDed, first match in file order, every time
// it matches; and the max-26.5.0 conditions against the snapshots of realistic lifecycles.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "renderer/faults/FaultInjector.h"
#include "renderer/faults/FaultPlan.h"
#include "tests/faults/CallScript.h"

namespace gpufuzz::test {
namespace {

CounterSnapshot with(std::initializer_list<std::pair<Counter, uint64_t>> values) {
  CounterSnapshot s;
  for (const auto& [counter, value] : values) {
    s[counter] = value;
  }
  return s;
}

TEST(Condition, EveryComparisonAtItsBoundary) {
  struct Case {
    Comparison cmp;
    bool below, equal, above;  // actual = 4, 5, 6 against 5
  };
  const Case cases[] = {
      {Comparison::Ge, false, true, true},  {Comparison::Le, true, true, false},
      {Comparison::Eq, false, true, false}, {Comparison::Ne, true, false, true},
      {Comparison::Gt, false, false, true}, {Comparison::Lt, true, false, false},
  };
  for (const Case& c : cases) {
    const Condition cond{Counter::Pending, c.cmp, 5};
    SCOPED_TRACE(std::string(comparisonSymbol(c.cmp)));
    EXPECT_EQ(cond.holds(with({{Counter::Pending, 4}})), c.below);
    EXPECT_EQ(cond.holds(with({{Counter::Pending, 5}})), c.equal);
    EXPECT_EQ(cond.holds(with({{Counter::Pending, 6}})), c.above);
  }
}

TEST(FaultPlanMatching, ConditionsAreAndedAndThePointMustMatch) {
  const FaultPlan plan =
      parseFaultPlan("error at buf_free when refs >= 1 and live_buffers > 2\n", "t.plan");
  const FaultRule* rule = &plan.rules.at(0);
  const auto bothHold = with({{Counter::Refs, 1}, {Counter::LiveBuffers, 3}});
  EXPECT_EQ(plan.firstMatch(CallPoint::BufFree, bothHold), rule);
  EXPECT_EQ(plan.firstMatch(CallPoint::BufAlloc, bothHold), nullptr);
  EXPECT_EQ(plan.firstMatch(CallPoint::BufFree, with({{Counter::Refs, 1}})), nullptr);
  EXPECT_EQ(plan.firstMatch(CallPoint::BufFree, with({{Counter::LiveBuffers, 3}})), nullptr);
}

TEST(FaultPlanMatching, FirstMatchingRuleInFileOrderWins) {
  const FaultPlan plan = parseFaultPlan(
      "error at sync when pending >= 2\n"
      "delay=5 at sync when pending >= 1\n"
      "hang at sync\n",
      "t.plan");
  EXPECT_EQ(plan.firstMatch(CallPoint::Sync, with({{Counter::Pending, 3}}))->line, 1);
  EXPECT_EQ(plan.firstMatch(CallPoint::Sync, with({{Counter::Pending, 1}}))->line, 2);
  EXPECT_EQ(plan.firstMatch(CallPoint::Sync, with({}))->line, 3);
}

TEST(FaultInjector, FirstMatchWinsAndRulesFireEveryTime) {
  CallScript script;
  auto injector =
      std::make_shared<FaultInjector>(parseFaultPlan("error at buf_free when refs >= 1\n"
                                                     "leak at buf_free\n",
                                                     "t.plan"));
  std::vector<int> fired;
  injector->setFiredObserver(
      [&](const FaultRule& rule, const CallSite& site, const CounterSnapshot&) {
        EXPECT_EQ(site.point, CallPoint::BufFree);
        fired.push_back(rule.line);
      });
  script.device().addInterceptor(injector);
  for (std::string_view step :
       {"create A", "alloc A a", "alloc A b", "alloc A c", "alloc A d", "launch A d d"}) {
    script.run(step);
  }
  EXPECT_EQ(injector->lastFired(), nullptr);

  for (std::string_view step : {"free a", "free b", "free c"}) {
    script.run(step);
  }
  EXPECT_EQ(fired, (std::vector<int>{2, 2, 2}));
  EXPECT_TRUE(script.log().freed.empty()) << "every free leaked";
  EXPECT_EQ(script.device().memoryInUse().buffers, 4U);
  ASSERT_NE(injector->lastFired(), nullptr);
  EXPECT_EQ(injector->lastFired()->line, 2);

  EXPECT_THROW(script.run("free d"), DeviceError) << "d is still used by the pending launch";
  EXPECT_EQ(fired, (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(injector->lastFired()->line, 1);
}

// Which rule of max-26.5.0 (by line) each buf_alloc of a lifecycle would meet.
std::vector<std::optional<int>> max2650Verdicts(const std::vector<std::string_view>& steps) {
  const FaultPlan plan = loadFaultPlan("max-26.5.0");
  CallScript script;
  for (std::string_view step : steps) {
    script.run(step);
  }
  std::vector<std::optional<int>> verdicts;
  for (const auto& entry : script.entries()) {
    if (entry.site.point != CallPoint::BufAlloc) continue;
    const FaultRule* rule = plan.firstMatch(entry.site.point, entry.counters);
    verdicts.push_back(rule != nullptr ? std::optional<int>(rule->line) : std::nullopt);
  }
  return verdicts;
}

constexpr std::optional<int> kNoRule = std::nullopt;
constexpr int kCondition1 = 2;  // lines in max-26.5.0.plan
constexpr int kCondition2 = 5;

TEST(Max2650, Condition1HangsTheFirstAllocAfterAContextDiedWithLiveBuffers) {
  // The seed: two renderers, each tearing its context down before its buffers.
  EXPECT_EQ(max2650Verdicts({"create A", "alloc A fb", "alloc A vb", "destroy A", "free fb",
                             "free vb", "create B", "alloc B fb", "alloc B vb"}),
            (std::vector<std::optional<int>>{kNoRule, kNoRule, kCondition1, kNoRule}));
  // Created but never drawn, still hangs: only the order of the last two destructions matters.
  EXPECT_EQ(max2650Verdicts({"create A", "alloc A x", "destroy A", "create B", "alloc B y"}),
            (std::vector<std::optional<int>>{kNoRule, kCondition1}));
}

TEST(Max2650, BuffersFirstNeverHangs) {
  EXPECT_EQ(
      max2650Verdicts({"create A", "alloc A x", "launch A x x", "sync A", "free x", "destroy A",
                       "create B", "alloc B y", "free y", "destroy B", "create C", "alloc C z"}),
      (std::vector<std::optional<int>>{kNoRule, kNoRule, kNoRule}));
  EXPECT_EQ(max2650Verdicts({"create A", "create B", "alloc B x"}),
            (std::vector<std::optional<int>>{kNoRule}))
      << "two bare contexts";
}

TEST(Max2650, Condition2NeedsPendingAtDestroyAndAThirdContext) {
  // Each renderer draws, is never read back, and is dropped buffers first (the order fix), so
  // its context is destroyed with the draw still pending. Two renderers: no hang, as the minimal
  // reproduction found.
  EXPECT_EQ(
      max2650Verdicts({"create A", "alloc A fb", "launch A fb fb", "free fb", "destroy A",
                       "create B", "alloc B fb2", "launch B fb2 fb2", "free fb2", "destroy B"}),
      (std::vector<std::optional<int>>{kNoRule, kNoRule}));
  // A third renderer's first allocation hangs, and only its first (first_in_ctx).
  EXPECT_EQ(max2650Verdicts({"create A", "alloc A fb", "launch A fb fb", "free fb", "destroy A",
                             "create B", "alloc B fb2", "launch B fb2 fb2", "free fb2", "destroy B",
                             "create C", "alloc C fb3", "alloc C vb3"}),
            (std::vector<std::optional<int>>{kNoRule, kNoRule, kCondition2, kNoRule}));
  // Every renderer synchronized before its teardown: nothing pending at destroy, no hang.
  EXPECT_EQ(max2650Verdicts({"create A", "alloc A fb", "launch A fb fb", "sync A", "free fb",
                             "destroy A", "create B", "alloc B fb2", "launch B fb2 fb2", "sync B",
                             "free fb2", "destroy B", "create C", "alloc C fb3"}),
            (std::vector<std::optional<int>>{kNoRule, kNoRule, kNoRule}));
}

}  // namespace
}  // namespace gpufuzz::test
