// PlanLookupTests.cpp: the built-in plans, found by name, say what the contract says; paths and
// unknown names behave.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/InputError.h"
#include "renderer/faults/FaultPlan.h"
#include "tests/ProjectPaths.h"
#include "tests/ScratchDir.h"

namespace gpufuzz {
namespace {

namespace fs = std::filesystem;

using testing::ScratchDir;

TEST(BuiltinPlans, Names) {
  const std::vector<std::string_view> names(builtinPlanNames().begin(), builtinPlanNames().end());
  EXPECT_EQ(names, (std::vector<std::string_view>{"none", "max-26.5.0", "max-26.6.0",
                                                  "strict-lifetimes"}));
}

TEST(BuiltinPlans, NoneAndTheFixedRuntimeHaveNoRules) {
  for (std::string_view name : {"none", "max-26.6.0"}) {
    const FaultPlan plan = loadFaultPlan(name);
    EXPECT_EQ(plan.name, name);
    EXPECT_TRUE(plan.rules.empty()) << name;
  }
}

TEST(BuiltinPlans, Max2650HasTheSeedsTwoConditions) {
  const FaultPlan plan = loadFaultPlan("max-26.5.0");
  EXPECT_EQ(plan.name, "max-26.5.0");
  ASSERT_EQ(plan.rules.size(), 2U);

  const FaultRule& first = plan.rules[0];
  EXPECT_EQ(first.effect, Effect::Hang);
  EXPECT_EQ(first.point, CallPoint::BufAlloc);
  EXPECT_EQ(first.conditions, (std::vector<Condition>{
                                  {Counter::CtxCalls, Comparison::Eq, 0},
                                  {Counter::CtxDestroyedWithLiveBuffers, Comparison::Ge, 1},
                              }));
  EXPECT_EQ(first.text,
            "hang at buf_alloc when first_in_ctx and ctx_destroyed_with_live_buffers >= 1");

  const FaultRule& second = plan.rules[1];
  EXPECT_EQ(second.effect, Effect::Hang);
  EXPECT_EQ(second.point, CallPoint::BufAlloc);
  EXPECT_EQ(second.conditions, (std::vector<Condition>{
                                   {Counter::CtxCalls, Comparison::Eq, 0},
                                   {Counter::CtxDestroyedWithPending, Comparison::Ge, 1},
                                   {Counter::CtxIndex, Comparison::Ge, 2},
                               }));
  EXPECT_EQ(second.text,
            "hang at buf_alloc when first_in_ctx and ctx_destroyed_with_pending >= 1 and "
            "ctx_index >= 2");
}

TEST(BuiltinPlans, StrictLifetimesForbidsFreeingWhatPendingWorkUses) {
  const FaultPlan plan = loadFaultPlan("strict-lifetimes");
  ASSERT_EQ(plan.rules.size(), 1U);
  EXPECT_EQ(plan.cite(plan.rules[0]), "strict-lifetimes:1: error at buf_free when refs >= 1");
  EXPECT_EQ(plan.rules[0].effect, Effect::Error);
  EXPECT_EQ(plan.rules[0].point, CallPoint::BufFree);
  EXPECT_EQ(plan.rules[0].conditions, (std::vector<Condition>{{Counter::Refs, Comparison::Ge, 1}}));
}

TEST(BuiltinPlans, TheBuildCopiesThemNextToTheExecutables) {
  for (std::string_view name : builtinPlanNames()) {
    const fs::path copy = testing::binDir() / "plans" / (std::string(name) + ".plan");
    EXPECT_TRUE(fs::is_regular_file(copy)) << copy;
  }
}

TEST(BuiltinPlans, PlanDirFromTheEnvironmentComesFirst) {
  ScratchDir dir;
  dir.write("none.plan", "\nhang at sync\n");
  ::setenv("GPUFUZZ_PLAN_DIR", dir.path().c_str(), 1);
  const FaultPlan overridden = loadFaultPlan("none");
  // A directory without the plan defers to the next place.
  const FaultPlan fallenThrough = loadFaultPlan("strict-lifetimes");
  ::unsetenv("GPUFUZZ_PLAN_DIR");

  ASSERT_EQ(overridden.rules.size(), 1U);
  EXPECT_EQ(overridden.name, "none");
  EXPECT_EQ(overridden.file, (dir.path() / "none.plan").string());
  EXPECT_EQ(overridden.cite(overridden.rules[0]), "none:2: hang at sync");
  EXPECT_EQ(fallenThrough.rules.size(), 1U);
}

TEST(PlanLookup, AnythingElseIsAPath) {
  ScratchDir dir;
  const fs::path file = dir.write("mine.plan", "error at sync when calls >= 2\n");
  const FaultPlan plan = loadFaultPlan(file.string());
  EXPECT_EQ(plan.name, file.string());
  ASSERT_EQ(plan.rules.size(), 1U);
  EXPECT_EQ(plan.cite(plan.rules[0]), file.string() + ":1: error at sync when calls >= 2");
}

TEST(PlanLookup, ParseErrorsPointIntoTheFile) {
  ScratchDir dir;
  const fs::path file = dir.write("bad.plan", "# ok\nhang at nowhere\n");
  try {
    loadFaultPlan(file.string());
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), file.string());
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.column(), 9);
  }
}

TEST(PlanLookup, UnknownNameListsTheBuiltins) {
  try {
    loadFaultPlan("max-26.4.0");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("max-26.4.0"), std::string::npos) << message;
    for (std::string_view name : builtinPlanNames()) {
      EXPECT_NE(message.find(name), std::string::npos) << message;
    }
  }
}

TEST(PlanLookup, DirectoryIsNotAPlan) {
  ScratchDir dir;
  EXPECT_THROW(loadFaultPlan(dir.path().string()), InputError);
}

}  // namespace
}  // namespace gpufuzz
