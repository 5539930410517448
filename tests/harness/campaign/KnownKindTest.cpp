// KnownKindTest.cpp: a deadline miss of a kind already confirmed as a finding (the same class at
// the same kind of operation, or planted by the same fault-plan rule) is taken without the long
// confirmation and is seen early: a planted one as soon as a tenth of the deadline shows no
// progress after the runner said the rule fired, in whichever operation; a miss of any other
// kind still waits out its deadline and is confirmed. A planted hang's confirmation ends a tenth
// of the long deadline after its rule fires again; a planted delay's is waited out. Under a plan
// where most sequences hang, a campaign takes the fast path far more often than the slow one, and
// every finding it writes was confirmed.
#include <gtest/gtest.h>

#include <regex>

#include "harness/campaign/StatsFile.h"
#include "harness/search/Cause.h"
#include "harness/supervise/CrashSite.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

namespace fs = std::filesystem;

fs::path syncHangsPlan() {
  return testing::sourceDir() / "tests/harness/campaign/plans/sync-hangs.plan";
}

/// The milliseconds of "no progress for N ms" in a stuck run's detail.
long quietMillis(const RunOutcome& o) {
  std::smatch m;
  const std::regex pattern("no progress for ([0-9]+) ms");
  return std::regex_search(o.detail, m, pattern) ? std::stol(m[1]) : -1;
}

struct HangingTrials {
  testing::ScratchDir work;
  DeadlineCalibrator deadlines{testing::simDeadlines(Millis{200})};
  TrialRunner runner{
      testing::SimTrials::setupFor(TeardownPolicy::Shipped, syncHangsPlan().string(), work.path()),
      deadlines};
};

constexpr const char* kHangsAtSync = "create a\ndraw a\ndraw a\nsync a\n";
constexpr const char* kHangsAtDestroy = "create a\nset_textures a count=3\ndestroy a\n";

TEST(KnownKinds, AMissOfAConfirmedKindSkipsTheLongConfirmation) {
  HangingTrials trials;
  const Sequence sync = parseSequence(kHangsAtSync, "sync.seq");
  const TrialResult first = trials.runner.run(sync, TrialMode::Confirmed);
  ASSERT_EQ(first.outcome.cls, OutcomeClass::Hang) << outcomeText(first.outcome);
  ASSERT_EQ(first.outcome.op, "sync");
  EXPECT_EQ(first.executions, 2U);  // nothing known yet: confirmed under the long deadline
  EXPECT_EQ(trials.runner.longConfirmations(), 1U);
  // Its rule fired again in the confirmation: a tenth of the long deadline (2,000 ms), not all.
  EXPECT_GE(quietMillis(first.outcome), 200) << first.outcome.detail;
  EXPECT_LT(quietMillis(first.outcome), 1'000) << first.outcome.detail;

  trials.runner.markConfirmedKind(first.outcome);
  const TrialResult again = trials.runner.run(sync, TrialMode::Confirmed);
  EXPECT_EQ(again.outcome.cls, OutcomeClass::Hang) << outcomeText(again.outcome);
  EXPECT_EQ(again.outcome.op, "sync");
  EXPECT_EQ(again.executions, 1U);
  EXPECT_EQ(trials.runner.longConfirmations(), 1U);
  EXPECT_EQ(trials.runner.confirmationsSkipped(), 1U);
  // The rule fired: seen after a tenth of the 200 ms deadline, not after all of it.
  const long quiet = quietMillis(again.outcome);
  EXPECT_GE(quiet, 10) << again.outcome.detail;
  EXPECT_LT(quiet, 200) << again.outcome.detail;
}

TEST(KnownKinds, AMissOfAnotherKindIsStillConfirmed) {
  HangingTrials trials;
  RunOutcome syncHang{OutcomeClass::Hang, At{4}, "sync", "known", {}};
  trials.runner.markConfirmedKind(syncHang);
  // A spin at sync is not the hang at sync that was confirmed.
  EXPECT_FALSE(
      trials.runner.isConfirmedKind(RunOutcome{OutcomeClass::Spin, At{4}, "sync", "", {}}));
  const TrialResult destroy =
      trials.runner.run(parseSequence(kHangsAtDestroy, "destroy.seq"), TrialMode::Confirmed);
  EXPECT_EQ(destroy.outcome.cls, OutcomeClass::Hang) << outcomeText(destroy.outcome);
  EXPECT_EQ(destroy.outcome.op, "destroy");
  EXPECT_EQ(destroy.executions, 2U);
  EXPECT_EQ(trials.runner.longConfirmations(), 1U);
  EXPECT_EQ(trials.runner.confirmationsSkipped(), 0U);
  // Confirmed: a tenth of the long deadline after the plan's rule fired again.
  EXPECT_GE(quietMillis(destroy.outcome), 200) << destroy.outcome.detail;
}

TEST(KnownKinds, APlantedDelayIsWaitedOutInFull) {
  // A delay ends: its confirmation waits as long as the long deadline allows, and tells slow.
  testing::ScratchDir dir;
  const auto plan = dir.write("delays.plan", "delay=600 at sync when pending >= 3\n");
  DeadlineCalibrator deadlines{testing::simDeadlines(Millis{200})};
  TrialRunner runner{
      testing::SimTrials::setupFor(TeardownPolicy::Shipped, plan.string(), dir.path()), deadlines};
  const TrialResult slow =
      runner.run(parseSequence(kHangsAtSync, "sync.seq"), TrialMode::Confirmed);
  EXPECT_EQ(slow.outcome.cls, OutcomeClass::Slow) << outcomeText(slow.outcome);
  EXPECT_EQ(slow.outcome.op, "sync");
  EXPECT_EQ(slow.executions, 2U);
}

TEST(KnownKinds, ASlowOperationsStacksAreTakenWhenItRunsLate) {
  // A slow finishes, so no stuck run takes its stacks: on the H100 a destroy took 2.0 s in 5
  // of 5 tries, and its finding said nothing of where. Its evidence run takes them once the
  // operation passes the first run's deadline, and lets it finish.
  testing::ScratchDir dir;
  const auto plan = dir.write("delays.plan", "delay=600 at sync when pending >= 3\n");
  DeadlineCalibrator deadlines{testing::simDeadlines(Millis{200})};
  TrialRunner runner{
      testing::SimTrials::setupFor(TeardownPolicy::Shipped, plan.string(), dir.path(), true),
      deadlines};
  const Sequence seq = parseSequence(kHangsAtSync, "sync.seq");
  const TrialResult slow = runner.run(seq, TrialMode::Evidence);
  ASSERT_EQ(slow.outcome.cls, OutcomeClass::Slow) << outcomeText(slow.outcome);
  EXPECT_TRUE(slow.evidence.stacks.starts_with(kRunnerStacksBy)) << slow.evidence.stacks;
  // Taken in the confirmation that was slow, not in one more run: on an H100 a slow was not
  // late again in that run, and was shrunk without them.
  EXPECT_EQ(slow.executions, 2U);
  const std::vector<std::string> top = topFrames(slow.evidence.stacks, 8);
  EXPECT_TRUE(std::any_of(top.begin(), top.end(), [](const std::string& f) {
    return f.find("sync") != std::string::npos;
  })) << slow.evidence.stacks;
  // Without stacks asked for, none are taken.
  const TrialResult quiet = runner.run(seq, TrialMode::Confirmed);
  ASSERT_EQ(quiet.outcome.cls, OutcomeClass::Slow) << outcomeText(quiet.outcome);
  EXPECT_TRUE(quiet.evidence.stacks.empty()) << quiet.evidence.stacks;
}

TEST(KnownKinds, ALateOperationOfARunThatThenCrashesIsTheCrash) {
  // A slow is a pass past its budget. On the H100 a confirmation's ctx_destroy took 2.2 s, then
  // the process crashed at the end: it was recorded as a slow carrying the crash's frames.
  testing::ScratchDir dir;
  const auto plan =
      dir.write("late-then-crash.plan", "delay=600 at sync when pending >= 3\ncrash at buf_free\n");
  DeadlineCalibrator deadlines{testing::simDeadlines(Millis{200})};
  TrialRunner runner{
      testing::SimTrials::setupFor(TeardownPolicy::Shipped, plan.string(), dir.path()), deadlines};
  const std::string seq = std::string(kHangsAtSync) + "destroy a\n";
  const TrialResult t = runner.run(parseSequence(seq, "late.seq"), TrialMode::Confirmed);
  EXPECT_EQ(t.outcome.cls, OutcomeClass::Crash) << outcomeText(t.outcome);
  EXPECT_EQ(t.outcome.op, "destroy");
  EXPECT_NE(t.outcome.fault.find("crash at buf_free"), std::string::npos) << t.outcome.fault;
  EXPECT_EQ(t.executions, 2U);
}

TEST(KnownKinds, AQuickRunIsNotCountedAsASkippedConfirmation) {
  HangingTrials trials;
  trials.runner.markConfirmedKind(RunOutcome{OutcomeClass::Hang, At{4}, "sync", "known", {}});
  const TrialResult quick =
      trials.runner.run(parseSequence(kHangsAtSync, "sync.seq"), TrialMode::Quick);
  EXPECT_EQ(quick.outcome.cls, OutcomeClass::Hang);
  EXPECT_EQ(trials.runner.confirmationsSkipped(), 0U);
  EXPECT_LT(quietMillis(quick.outcome), 200) << quick.outcome.detail;
}

TEST(KnownKinds, AConfirmedPlantedHangIsKnownInEveryOperationItsRuleFiresIn) {
  // The plan's one rule hangs a synchronize: a `sync` makes one, and so does the shipped
  // renderer's `destroy`, which waits for its work. Both hangs are the rule's.
  HangingTrials trials;
  const TrialResult sync =
      trials.runner.run(parseSequence(kHangsAtSync, "sync.seq"), TrialMode::Confirmed);
  ASSERT_EQ(sync.outcome.cls, OutcomeClass::Hang) << outcomeText(sync.outcome);
  ASSERT_EQ(sync.outcome.op, "sync");
  ASSERT_NE(sync.outcome.fault.find("hang at sync when pending >= 3"), std::string::npos)
      << sync.outcome.fault;
  trials.runner.markConfirmedKind(sync.outcome);
  EXPECT_EQ(trials.runner.longConfirmations(), 1U);

  const TrialResult destroy =
      trials.runner.run(parseSequence(kHangsAtDestroy, "destroy.seq"), TrialMode::Confirmed);
  EXPECT_EQ(destroy.outcome.cls, OutcomeClass::Hang) << outcomeText(destroy.outcome);
  EXPECT_EQ(destroy.outcome.op, "destroy");
  EXPECT_EQ(destroy.outcome.fault, sync.outcome.fault);
  EXPECT_EQ(destroy.executions, 1U);
  EXPECT_EQ(trials.runner.longConfirmations(), 1U);
  EXPECT_EQ(trials.runner.confirmationsSkipped(), 1U);
  // The rule fired in the destroy: seen after a tenth of the 200 ms deadline.
  EXPECT_LT(quietMillis(destroy.outcome), 200) << destroy.outcome.detail;
}

TEST(KnownKinds, ACampaignWhereMostSequencesHangTakesTheFastPath) {
  testing::ScratchDir dir;
  const fs::path out = dir.path() / "findings";
  const auto r = testing::gpufuzz(testing::kQuickSimFuzz + " --faults " + syncHangsPlan().string() +
                                  " --runs 100 --max-ops 10 --seed 1 --out " + out.string());
  ASSERT_EQ(r.status, 1) << r.output;
  const auto stats = readStats(out / kStatsFile);
  ASSERT_TRUE(stats.has_value());
  const CampaignCounts& c = stats->run;
  EXPECT_GT(c.byClass[static_cast<std::size_t>(OutcomeClass::Hang)], 30U) << r.output;
  // Each kind's first miss is confirmed; most later misses are not.
  std::set<std::string> kinds;
  for (const auto& entry : fs::directory_iterator(out)) {
    const auto stored = readStoredFinding(entry.path());
    if (!stored) continue;
    const std::string id = stored->id;
    kinds.insert(id.substr(0, id.rfind('-')));
    EXPECT_GT(stored->reproduced, 0U) << id;  // every finding written was confirmed
  }
  ASSERT_FALSE(kinds.empty()) << r.output;
  EXPECT_GE(c.longConfirmations, kinds.size());
  EXPECT_GT(c.confirmationsSkipped, 2 * c.longConfirmations)
      << "long " << c.longConfirmations << ", skipped " << c.confirmationsSkipped;
}

}  // namespace
}  // namespace gpufuzz
