// CandidateLimitTest.cpp: a shrink of a failure that a run reaches by finishing its operations
// stops candidates stuck elsewhere long before their deadline, through real child processes on
// sim; a hang's shrink keeps its deadline. A round's candidates after the first that reproduces,
// and a round under way when the shrink window closes, are cancelled.
#include <gtest/gtest.h>

#include <chrono>

#include "harness/base/AtomicFile.h"
#include "harness/search/Explainer.h"
#include "harness/search/ExplanationReport.h"
#include "harness/search/Minimize.h"
#include "model/Sequence.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

using testing::binDir;
using testing::ScratchDir;

// A read-back after two launches fails; after one it hangs. The error's sequence loses a draw
// in one candidate of its shrink, and that candidate hangs.
constexpr const char* kPlan =
    "error at copy_to_host when launches >= 2\n"
    "hang at copy_to_host when launches == 1\n";
constexpr const char* kErrorSequence =
    "create r0\n"
    "draw r0\n"
    "draw r0\n"
    "read_back r0\n";

/// Deadlines fixed at `deadline`: a candidate that waited one out would take that long.
struct PlannedTrials {
  explicit PlannedTrials(Millis deadline, const char* plan = kPlan)
      : deadlines(settingsFor(deadline)) {
    writeFileAtomically(work.path() / "test.plan", plan);
    TrialSetup setup;
    setup.runner = (binDir() / "gpufuzz-runner").string();
    setup.backend = "sim";
    setup.policy = TeardownPolicy::Shipped;
    setup.faults = (work.path() / "test.plan").string();
    setup.workDir = work.path();
    setup.captureStacks = false;
    runner.emplace(setup, deadlines);
  }
  static DeadlineSettings settingsFor(Millis deadline) {
    DeadlineSettings s = DeadlineSettings::forBackend("sim");
    s.fixed = deadline;
    s.confirmFloor = deadline;
    return s;
  }
  ScratchDir work;
  DeadlineCalibrator deadlines;
  std::optional<TrialRunner> runner;
};

TEST(CandidateLimit, IsFourTimesTheFailingRunsLongestOperationAndAtLeastASecond) {
  TrialResult first;
  EXPECT_FALSE(candidateStuckLimit(first)) << "no time measured";
  first.evidence.wall = std::chrono::milliseconds{900};
  first.evidence.timings = {OpTiming{At{1}, "create", std::chrono::milliseconds{700}, {}},
                            OpTiming{At{2}, "draw", std::chrono::milliseconds{100}, {}}};
  EXPECT_EQ(candidateStuckLimit(first), Millis{2'800});    // 4 x the create's 700 ms
  first.evidence.wall = std::chrono::milliseconds{2'000};  // 1,200 ms the finished ones miss
  EXPECT_EQ(candidateStuckLimit(first), Millis{4'800});
  first.evidence.wall = std::chrono::milliseconds{20};
  first.evidence.timings = {OpTiming{At{1}, "create", std::chrono::milliseconds{5}, {}}};
  EXPECT_EQ(candidateStuckLimit(first), kLeastCandidateLimit);
}

TEST(CandidateLimit, OfAFindingIsFourTimesItsConfirmationsLongestOperation) {
  Finding f;
  EXPECT_FALSE(candidateStuckLimit(f)) << "no confirmation run kept";
  f.timings = {OpTiming{At{1}, "create", std::chrono::milliseconds{600}, {}},
               OpTiming{At{2}, "draw", std::chrono::milliseconds{100}, {}}};
  EXPECT_EQ(candidateStuckLimit(f), Millis{2'400});
  f.timings = {OpTiming{At{1}, "create", std::chrono::milliseconds{5}, {}}};
  EXPECT_EQ(candidateStuckLimit(f), kLeastCandidateLimit);
}

// `gpufuzz explain` and a campaign's explanations run experiments on the minimal sequence: the
// one that drops a draw hangs, and with the limit it is stopped after about a second, not at its
// 30 s deadline. It still tells the failure apart (the removal changes it).
TEST(CandidateLimit, AnErrorsExplanationStopsAnExperimentThatHangs) {
  constexpr Millis kDeadline{30'000};
  PlannedTrials trials(kDeadline);
  const Sequence failing = parseSequence(kErrorSequence, "error.seq");
  const TrialResult first = trials.runner->run(failing, TrialMode::Quick);
  ASSERT_EQ(first.outcome.cls, OutcomeClass::Error) << outcomeText(first.outcome);
  ExplainOptions options;
  options.shrink = false;
  options.confirmations = 1;
  options.candidateLimit = candidateStuckLimit(first);
  const auto start = std::chrono::steady_clock::now();
  const Explanation e = explainFailure(*trials.runner, 2, failing, first.outcome, options);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, kDeadline) << "an experiment waited out its deadline";
  ASSERT_EQ(e.removals.size(), 4U);
  const std::string markdown = explanationMarkdown(explanationReport(e));
  EXPECT_NE(markdown.find("hang"), std::string::npos) << markdown;
}

TEST(CandidateLimit, AnErrorsShrinkStopsACandidateThatHangsLongBeforeItsDeadline) {
  constexpr Millis kDeadline{30'000};
  PlannedTrials trials(kDeadline);
  const Sequence failing = parseSequence(kErrorSequence, "error.seq");
  const TrialResult first = trials.runner->run(failing, TrialMode::Quick);
  ASSERT_FALSE(first.harnessError) << *first.harnessError;
  ASSERT_EQ(first.outcome.cls, OutcomeClass::Error) << outcomeText(first.outcome);
  const std::optional<Millis> limit = candidateStuckLimit(first);
  ASSERT_TRUE(limit);
  EXPECT_LT(*limit, kDeadline / 10);

  Shrinker shrinker(*trials.runner, 2);
  shrinker.limitCandidates(limit);
  const auto start = std::chrono::steady_clock::now();
  const ShrinkResult shrunk = shrinker.shrink(failing, first.outcome);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(shrunk.candidatesCut, 1U) << "no candidate hung: the plan no longer makes one";
  // Without the limit, the hanging candidate alone would have taken the whole deadline.
  EXPECT_LT(took, kDeadline);
  EXPECT_EQ(shrunk.outcome.cls, OutcomeClass::Error) << outcomeText(shrunk.outcome);
  EXPECT_EQ(shrunk.minimal.ops.size(), 4U) << "every operation is needed for the error";
}

TEST(CandidateLimit, AHangsShrinkKeepsItsDeadline) {
  constexpr Millis kDeadline{300};
  PlannedTrials trials(kDeadline);
  const Sequence failing = parseSequence("create r0\ndraw r0\nread_back r0\ndraw r0\n", "h.seq");
  const TrialResult first = trials.runner->run(failing, TrialMode::Quick);
  ASSERT_EQ(first.outcome.cls, OutcomeClass::Hang) << outcomeText(first.outcome);
  Shrinker shrinker(*trials.runner, 2);
  shrinker.limitCandidates(Millis{1});  // would stop every candidate at once if applied
  const ShrinkResult shrunk = shrinker.shrink(failing, first.outcome);
  EXPECT_EQ(shrunk.candidatesCut, 0U);
  EXPECT_EQ(shrunk.outcome.cls, OutcomeClass::Hang) << outcomeText(shrunk.outcome);
  EXPECT_EQ(shrunk.minimal.ops.size(), 3U) << printSequence(shrunk.minimal);
}

// A campaign's grace keeps its last fifth for confirmations (TrialRunner::shrinkUntil): a shrink
// whose window has closed ends with its best so far, and is still confirmed, where a stop would
// leave it unconfirmed. A shrink whose turn is over (Shrinker::endTurnWhen) ends the same way.
// With the window open and the turn not over, the same failure shrinks to its 4 operations.
TEST(ShrinkWindow, AShrinkPastItsWindowOrTurnEndsWithItsBestAndIsStillConfirmed) {
  const Sequence failing =
      parseSequence("create r0\ndraw r0\ncreate r1\ndraw r0\nread_back r0\n", "padded.seq");
  enum class End { None, Window, Turn };
  for (const End end : {End::None, End::Window, End::Turn}) {
    SCOPED_TRACE(end == End::None ? "open" : end == End::Window ? "window closed" : "turn over");
    PlannedTrials trials(Millis{30'000});
    const TrialResult first = trials.runner->run(failing, TrialMode::Quick);
    ASSERT_EQ(first.outcome.cls, OutcomeClass::Error) << outcomeText(first.outcome);
    if (end == End::Window) trials.runner->shrinkUntil(std::chrono::steady_clock::now());
    Shrinker shrinker(*trials.runner, 2);
    int asked = 0;
    shrinker.endTurnWhen([&] {
      ++asked;
      return end == End::Turn;
    });
    const Finding f = minimizeFailure(shrinker, *trials.runner, {failing, first, {}, {}, 2});
    const bool cut = end != End::None;
    EXPECT_EQ(f.shrinkCutShort, cut);
    EXPECT_FALSE(f.stopped);
    EXPECT_EQ(f.minimal.ops.size(), cut ? 5U : 4U) << printSequence(f.minimal);
    EXPECT_EQ(f.confirmations, 2U);
    EXPECT_EQ(f.reproduced, 2U);
    if (end != End::Window) {
      EXPECT_GT(asked, 0) << "the turn is asked between rounds";
    }
  }
}

// Only the first candidate of a round that reproduces is taken, so those after it are cancelled
// once it does. Here the round's second candidate (the context removed) reproduces the error and
// the third (the draw removed) hangs for good: without the cancel, the shrink would wait out its
// 30 s deadline. The result is the one order gives, as without the cancel.
TEST(ShrinkRound, CandidatesAfterTheFirstThatReproducesAreCancelled) {
  constexpr Millis kDeadline{30'000};
  PlannedTrials trials(kDeadline,
                       "error at copy_to_host when launches >= 1\n"
                       "hang at copy_to_host when live_contexts >= 2\n");
  const Sequence failing =
      parseSequence("create r0\ncreate r1\ndraw r1\nread_back r1\n", "two-contexts.seq");
  const TrialResult first = trials.runner->run(failing, TrialMode::Quick);
  ASSERT_EQ(first.outcome.cls, OutcomeClass::Error) << outcomeText(first.outcome);
  // The hanging candidate is there: a round of it alone waits out the deadline (kept short).
  PlannedTrials quick(Millis{300}, "hang at copy_to_host when live_contexts >= 2\n");
  const TrialResult hung = quick.runner->run(
      parseSequence("create r0\ncreate r1\nread_back r1\n", "h.seq"), TrialMode::Quick);
  ASSERT_EQ(hung.outcome.cls, OutcomeClass::Hang) << outcomeText(hung.outcome);

  Shrinker shrinker(*trials.runner, 4);
  const auto start = std::chrono::steady_clock::now();
  const ShrinkResult shrunk = shrinker.shrink(failing, first.outcome);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, kDeadline / 3) << "a candidate after the reproducing one ran to its deadline";
  EXPECT_GE(shrunk.candidatesCancelled, 1U);
  EXPECT_EQ(shrunk.outcome.cls, OutcomeClass::Error) << outcomeText(shrunk.outcome);
  EXPECT_EQ(printSequence(shrunk.minimal),
            printSequence(parseSequence("create r0\ndraw r0\nread_back r0\n", "expected.seq")));
  EXPECT_FALSE(shrunk.cutShort);
}

// A round still running when the shrink window closes is cancelled: here every candidate of
// the first round hangs for good, and the shrink ends with the failing sequence, cut short,
// long before the candidates' 30 s deadline.
TEST(ShrinkRound, ARoundRunningWhenTheWindowClosesIsCancelled) {
  constexpr Millis kDeadline{30'000};
  PlannedTrials trials(kDeadline,
                       "error at copy_to_host when launches >= 2\n"
                       "hang at copy_to_host when launches == 1\n");
  const Sequence failing = parseSequence("create r0\ndraw r0\ndraw r0\nread_back r0\n", "e.seq");
  const TrialResult first = trials.runner->run(failing, TrialMode::Quick);
  ASSERT_EQ(first.outcome.cls, OutcomeClass::Error) << outcomeText(first.outcome);
  Shrinker shrinker(*trials.runner, 4);
  const auto start = std::chrono::steady_clock::now();
  trials.runner->shrinkUntil(start + std::chrono::seconds(2));
  const ShrinkResult shrunk = shrinker.shrink(failing, first.outcome);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, kDeadline / 3) << "the round ran on past the window's close";
  EXPECT_GE(took, std::chrono::seconds(2)) << "the round ended before the window closed";
  EXPECT_GE(shrunk.candidatesCancelled, 1U);
  EXPECT_TRUE(shrunk.cutShort);
  EXPECT_EQ(shrunk.minimal.ops.size(), 4U) << printSequence(shrunk.minimal);
}

}  // namespace
}  // namespace gpufuzz
