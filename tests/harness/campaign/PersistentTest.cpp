// PersistentTest.cpp: --persistent N. A persistent child runs sequences one after another in
// one process (the plan's process-wide counters carry over, which is how the tests see it), up
// to N of them; anything but a pass ends that process and hands back what it ran before; a
// campaign re-runs such a failure in a fresh process, alone and then after those sequences, so
// a failure that only a process's history causes is still found, shrunk and replayable.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "harness/campaign/StatsFile.h"
#include "harness/search/Shrinker.h"
#include "model/SequenceEdits.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

namespace fs = std::filesystem;

// One launch: the draw's. Alone it passes under a rule that needs an earlier launch in the
// process; a second run in the same process meets the rule at its draw.
constexpr const char* kOneLaunch = "create a\ndraw a\n";

struct PersistentTrials {
  testing::ScratchDir work;
  fs::path plan;
  DeadlineCalibrator deadlines{testing::simDeadlines(Millis{300})};
  std::unique_ptr<TrialRunner> runner;

  explicit PersistentTrials(const std::string& rule)
      : plan(work.write("rule.plan", rule + "\n")),
        runner(std::make_unique<TrialRunner>(
            testing::SimTrials::setupFor(TeardownPolicy::Shipped, plan.string(), work.path()),
            deadlines)) {}
};

TEST(Persistent, SequencesShareOneProcessAndAFailureHandsBackWhatRanBefore) {
  PersistentTrials trials("error at launch when launches >= 1");
  // In a model other than the default `all`: what ran before keeps its model, so the campaign can
  // concatenate it with the failure.
  const Sequence seq = parseSequence(kOneLaunch, "one.seq", &builtinModel("renderer"));
  // Fresh, it passes every time: each process starts its counters at zero.
  EXPECT_EQ(trials.runner->run(seq, TrialMode::Quick).outcome.cls, OutcomeClass::Pass);
  EXPECT_EQ(trials.runner->run(seq, TrialMode::Quick).outcome.cls, OutcomeClass::Pass);

  PersistentRuns runs(10);
  const TrialResult first = trials.runner->runPersistent(runs, seq);
  EXPECT_EQ(first.outcome.cls, OutcomeClass::Pass) << outcomeText(first.outcome);
  EXPECT_FALSE(first.harnessError) << *first.harnessError;
  EXPECT_EQ(runs.historySize(), 1U);
  const TrialResult second = trials.runner->runPersistent(runs, seq);
  ASSERT_FALSE(second.harnessError) << *second.harnessError;
  EXPECT_EQ(second.outcome.cls, OutcomeClass::Error) << outcomeText(second.outcome);
  EXPECT_EQ(second.outcome.op, "draw");
  ASSERT_EQ(second.before.size(), 1U);  // the first sequence, which its process ran before it
  EXPECT_EQ(second.before.front().ops, seq.ops);
  EXPECT_EQ(second.before.front().model, seq.model);
  EXPECT_EQ(concatenate({second.before.front(), seq}).model, seq.model);
  EXPECT_EQ(runs.historySize(), 0U);
  // The failure ended that process: the next sequence starts a fresh one, and passes.
  const TrialResult third = trials.runner->runPersistent(runs, seq);
  EXPECT_EQ(third.outcome.cls, OutcomeClass::Pass) << outcomeText(third.outcome);
  EXPECT_EQ(trials.runner->executions(), 5U);
}

TEST(Persistent, AProcessRunsAtMostNSequences) {
  // The third launch of a process fails: with 2 sequences a process, none ever meets it.
  PersistentTrials trials("error at launch when launches >= 2");
  const Sequence seq = parseSequence(kOneLaunch, "one.seq");
  PersistentRuns two(2);
  for (int i = 0; i < 6; ++i) {
    const TrialResult r = trials.runner->runPersistent(two, seq);
    EXPECT_EQ(r.outcome.cls, OutcomeClass::Pass) << i << ": " << outcomeText(r.outcome);
    EXPECT_FALSE(r.harnessError) << *r.harnessError;
  }
  PersistentRuns three(3);
  EXPECT_EQ(trials.runner->runPersistent(three, seq).outcome.cls, OutcomeClass::Pass);
  EXPECT_EQ(trials.runner->runPersistent(three, seq).outcome.cls, OutcomeClass::Pass);
  const TrialResult third = trials.runner->runPersistent(three, seq);
  EXPECT_EQ(third.outcome.cls, OutcomeClass::Error) << outcomeText(third.outcome);
  EXPECT_EQ(third.before.size(), 2U);
}

TEST(Persistent, AStuckSequenceIsKilledAtItsDeadlineAndTheNextStartsAfresh) {
  PersistentTrials trials("hang at launch when launches >= 1");
  const Sequence seq = parseSequence(kOneLaunch, "one.seq");
  PersistentRuns runs(100);
  EXPECT_EQ(trials.runner->runPersistent(runs, seq).outcome.cls, OutcomeClass::Pass);
  const auto began = std::chrono::steady_clock::now();
  const TrialResult stuck = trials.runner->runPersistent(runs, seq);
  const auto took = std::chrono::steady_clock::now() - began;
  ASSERT_FALSE(stuck.harnessError) << *stuck.harnessError;
  EXPECT_TRUE(stuck.evidence.stuck);
  EXPECT_EQ(stuck.outcome.cls, OutcomeClass::Hang) << outcomeText(stuck.outcome);
  EXPECT_EQ(stuck.outcome.op, "draw");
  EXPECT_LT(took, std::chrono::seconds(10));
  EXPECT_EQ(stuck.before.size(), 1U);
  EXPECT_EQ(trials.runner->runPersistent(runs, seq).outcome.cls, OutcomeClass::Pass);
}

TEST(Persistent, AConcatenationRunsThePartsAsOneProcessRunsThem) {
  // Each part names its objects alike; the whole releases what each part left alive, in the
  // runner's order for leftovers, and fails fresh where the persistent process failed.
  const Sequence a = parseSequence(
      "create r0\nctx_create c0\nbuf_create c0 b0\ndraw r0\ncreate r1\ndestroy r0\n", "a.seq");
  const Sequence b = parseSequence(kOneLaunch, "b.seq");
  const Sequence whole = concatenate({a, b});
  EXPECT_TRUE(isValid(whole));
  EXPECT_EQ(normalizedOperations(whole),
            "create r0\nctx_create c0\nbuf_create c0 b0\ndraw r0\ncreate r1\ndestroy r0\n"
            "destroy r1\nbuf_destroy b0\nctx_destroy c0\ncreate r2\ndraw r2\n");
  PersistentTrials trials("error at launch when launches >= 1");
  EXPECT_EQ(trials.runner->run(b, TrialMode::Quick).outcome.cls, OutcomeClass::Pass);
  const TrialResult fresh = trials.runner->run(whole, TrialMode::Quick);
  EXPECT_EQ(fresh.outcome.cls, OutcomeClass::Error) << outcomeText(fresh.outcome);
  EXPECT_EQ(fresh.outcome.at, At{11});
}

boost::json::object readJson(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return boost::json::parse(text.str()).as_object();
}

TEST(Persistent, ACampaignFindsWhatOnlyAProcessesHistoryCauses) {
  // No sequence of at most 4 operations launches 6 times, so fresh processes never crash;
  // persistent ones do, and the finding is shrunk from the sequences run before.
  testing::ScratchDir dir;
  const fs::path plan = dir.write("sixth.plan", "crash at launch when launches >= 5\n");
  const std::string common = "fuzz --backend sim --faults " + plan.string() +
                             " --runs 120 --max-ops 4 --seed 3 --jobs 1 --deadline 300 "
                             "--confirmations 2 --no-explain --quiet";
  const testing::CommandResult fresh =
      testing::gpufuzz(common + " --out " + (dir.path() / "fresh").string());
  EXPECT_EQ(fresh.status, 0) << fresh.output;

  const fs::path out = dir.path() / "persistent";
  const testing::CommandResult run =
      testing::gpufuzz(common + " --persistent 50 --out " + out.string());
  ASSERT_EQ(run.status, 1) << run.output;
  EXPECT_NE(run.output.find("persistent 50"), std::string::npos) << run.output;
  const boost::json::object stats = readJson(out / kStatsFile);
  EXPECT_EQ(stats.at("persistent").to_number<int64_t>(), 50);
  EXPECT_GE(stats.at("persistent_failures").to_number<int64_t>(), 1);
  EXPECT_EQ(stats.at("persistent_same_alone").to_number<int64_t>(), 0);
  EXPECT_GE(stats.at("persistent_needed_history").to_number<int64_t>(), 1);
  int findings = 0;
  for (const auto& entry : fs::directory_iterator(out)) {
    if (!entry.is_directory() || !entry.path().filename().string().starts_with("crash-")) continue;
    ++findings;
    const fs::path minimal = entry.path() / "minimal.seq";
    const Sequence seq = loadSequence(minimal.string());
    EXPECT_GT(seq.ops.size(), 4U) << printSequence(seq);  // longer than any one sequence
    const testing::CommandResult replay = testing::gpufuzz("replay --quiet " + minimal.string());
    EXPECT_EQ(replay.status, 0) << replay.output;  // a fresh process meets its expectation
  }
  EXPECT_EQ(findings, 1) << run.output;
}

TEST(Persistent, ALongHistoryShrinksByRangesToTheFewStepsItNeeds) {
  // A history as a persistent process hands back: 150 renderers drawn and read back (450
  // operations that pass), then the seed's first condition under context-first (a renderer
  // destroyed before its buffers, then another renderer's first allocation hangs).
  std::string text;
  for (int k = 0; k < 150; ++k) {
    const std::string r = "r" + std::to_string(k);
    text += "create " + r + "\ndraw " + r + "\nread_back " + r + "\n";
  }
  text += "destroy r0\ncreate z\n";
  const Sequence history = parseSequence(text, "history.seq");
  ASSERT_EQ(history.ops.size(), 452U);
  testing::ScratchDir work;
  DeadlineCalibrator deadlines{testing::simDeadlines(Millis{150})};
  TrialRunner trials(
      testing::SimTrials::setupFor(TeardownPolicy::ContextFirst, "max-26.5.0", work.path()),
      deadlines);
  const TrialResult first = trials.run(history, TrialMode::Quick);
  ASSERT_EQ(first.outcome.cls, OutcomeClass::Hang) << outcomeText(first.outcome);
  Shrinker shrinker(trials, 2);
  const ShrinkResult shrunk = shrinker.shrink(history, first.outcome);
  EXPECT_EQ(normalizedOperations(shrunk.minimal), "create r0\ndestroy r0\ncreate r1\n");
  // Ranges went first (single edits of 452 operations would be 452 candidates of 451 each, and
  // as many again per step); the whole shrink stays within a few hundred runs.
  ASSERT_FALSE(shrunk.steps.empty());
  EXPECT_NE(shrunk.steps.front().find("operations from"), std::string::npos)
      << shrunk.steps.front();
  EXPECT_LT(shrunk.executions, 400U);
}

TEST(Persistent, BadValuesAndCombinationsAreRefusedBeforeAnythingRuns) {
  testing::ScratchDir dir;
  for (const std::string& bad : {std::string("--persistent 0"), std::string("--persistent x"),
                                 std::string("--persistent 5 --target /bin/true")}) {
    const fs::path out = dir.path() / "out";
    const bool target = bad.find("--target") != std::string::npos;
    const testing::CommandResult r =
        testing::gpufuzz(std::string("fuzz --runs 5 ") + (target ? "" : "--backend sim ") + bad +
                         " --out " + out.string());
    EXPECT_EQ(r.status, 2) << bad << "\n" << r.output;
    EXPECT_NE(r.output.find("--persistent"), std::string::npos) << bad << "\n" << r.output;
    EXPECT_FALSE(fs::exists(out / kStatsFile)) << bad;
  }
}

}  // namespace
}  // namespace gpufuzz
