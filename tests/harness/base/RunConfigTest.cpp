// RunConfigTest.cpp: what a run is configured with (tests/harness/cli/RunnerArgsTest.cpp: how
// it reaches the runner).
#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>
#include <vector>

#include "base/InputError.h"
#include "harness/base/RunConfig.h"
#include "model/Schedule.h"

namespace gpufuzz {
namespace {

TEST(RunConfig, BackendNamesAreChecked) {
  EXPECT_THROW(resolveRunConfig(RunOverrides{"metal", {}, {}, {}, {}}, Directives{}, ""),
               InputError);
  EXPECT_EQ(resolveRunConfig(RunOverrides{"opencl", {}, {}, {}, {}}, Directives{}, "").backend,
            "opencl");
}

TEST(RunConfig, TheScheduleIsTheCommandLinesThenTheFilesThenMix) {
  Directives file;
  EXPECT_EQ(resolveRunConfig(RunOverrides{}, file, "").schedule, ScheduleMode::Mix);
  EXPECT_EQ(resolveRunConfig(RunOverrides{}, file, "").firstTry, 0U);
  file.schedule = "pct";
  file.attempt = 7;
  EXPECT_EQ(resolveRunConfig(RunOverrides{}, file, "").schedule, ScheduleMode::Pct);
  EXPECT_EQ(resolveRunConfig(RunOverrides{}, file, "").firstTry, 7U);
  RunOverrides cl;
  cl.schedule = ScheduleMode::Os;
  EXPECT_EQ(resolveRunConfig(cl, file, "").schedule, ScheduleMode::Os);
}

TEST(RunConfig, MixTakesEachScheduleInTurnFromWhereTheSeedSays) {
  for (const uint64_t seed : {0ULL, 1ULL, 99ULL}) {
    std::set<ScheduleMode> seen;
    for (uint64_t attempt = 0; attempt < 3; ++attempt)
      seen.insert(scheduleOfTry(ScheduleMode::Mix, seed, attempt));
    EXPECT_EQ(seen.size(), 3U) << "seed " << seed;
    EXPECT_EQ(scheduleOfTry(ScheduleMode::Mix, seed, 5), scheduleOfTry(ScheduleMode::Mix, seed, 2));
    EXPECT_EQ(scheduleOfTry(ScheduleMode::Pct, seed, 1), ScheduleMode::Pct);
  }
  // The first tries of many sequences take each schedule about a third of the time.
  std::array<int, 4> first{};
  for (uint64_t seed = 0; seed < 300; ++seed)
    ++first[static_cast<std::size_t>(scheduleOfTry(ScheduleMode::Mix, seed, 0))];
  for (const ScheduleMode m : {ScheduleMode::Os, ScheduleMode::Pct, ScheduleMode::Collide})
    EXPECT_GT(first[static_cast<std::size_t>(m)], 60) << scheduleName(m);
}

}  // namespace
}  // namespace gpufuzz
