// ThreadedRunTest.cpp: threaded sequences (docs/sequences.md, Threads) through the runner on sim:
// the event order the harness checks, one schedule the same every time and tries that differ,
// several operations in flight each watched on its own (a hang blamed on the one that hangs, not on
// the one waiting for its turn), the `thread` and `inside_POINT` counters, and shrinking a race
// down to the operations and threads it needs.
#include <gtest/gtest.h>

#include <set>

#include "harness/base/AtomicFile.h"
#include "harness/protocol/Events.h"
#include "harness/search/Cause.h"
#include "harness/search/Shrinker.h"
#include "harness/supervise/CrashSite.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

using testing::runCommand;

const std::string kRacesDir = (testing::sourceDir() / "tests/races").string() + "/";

Event begin(uint32_t at, std::string op) {
  return Event{Event::Kind::Begin, 0, At{at}, std::move(op), {}, {}, {}, {}};
}
Event done(uint32_t at) {
  return Event{Event::Kind::Done, 0, At{at}, {}, {}, {}, {}, {}};
}
Event start(uint32_t n) {
  return Event{Event::Kind::Start, n, {}, {}, {}, {}, {}, {}};
}

TEST(EventOrderThreads, OperationsOfOtherThreadsMayBeInFlightTogether) {
  const Sequence s = parseSequence(
      "# model: device\nctx_create c0\nbuf_create c0 b0\n@1 ctx_create c1\n@1 buf_destroy b0\n",
      "t.seq");
  EventOrder order({"ctx_create", "buf_create", "ctx_create", "buf_destroy"}, threadWaits(s));
  EXPECT_EQ(order.accept(start(4)), "");
  EXPECT_EQ(order.accept(begin(3, "ctx_create")), "");
  EXPECT_EQ(order.accept(begin(1, "ctx_create")), "");
  EXPECT_EQ(order.running(), (std::set<uint32_t>{1, 3}));
  // 4 waits for 3 (its thread) and for 2 (b0).
  EXPECT_NE(order.accept(begin(4, "buf_destroy")).find("before operation"), std::string::npos);
}

TEST(EventOrderThreads, EachOrdinalBeginsOnceAfterWhatItWaitsFor) {
  const Sequence s = parseSequence(
      "# model: device\nctx_create c0\nbuf_create c0 b0\n@1 ctx_create c1\n@1 buf_destroy b0\n",
      "t.seq");
  EventOrder order({"ctx_create", "buf_create", "ctx_create", "buf_destroy"}, threadWaits(s));
  for (const Event& e : {start(4), begin(1, "ctx_create"), done(1), begin(2, "buf_create"),
                         begin(3, "ctx_create"), done(3), done(2), begin(4, "buf_destroy")}) {
    EXPECT_EQ(order.accept(e), "") << formatEvent(e);
  }
  EXPECT_NE(order.accept(begin(4, "buf_destroy")), "");
  // A fault names the operation it fired in; one not running is refused.
  EXPECT_EQ(order.accept(*parseEvent("fault hang @4 p.plan:1: hang at buf_free")), "");
  EXPECT_NE(order.accept(*parseEvent("fault hang @2 p.plan:1: hang at buf_free")), "");
  EXPECT_NE(order.accept(*parseEvent("outcome pass - - ")), "");  // 4 runs
  EXPECT_EQ(order.accept(done(4)), "");
  EXPECT_EQ(order.accept(*parseEvent("outcome pass - - ")), "");
}

TEST(EventOrderThreads, WithoutWaitsOperationsGoOneAfterAnother) {
  EventOrder order({"ctx_create", "ctx_create"});
  EXPECT_EQ(order.accept(start(2)), "");
  EXPECT_EQ(order.accept(begin(1, "ctx_create")), "");
  EXPECT_NE(order.accept(begin(2, "ctx_create")), "");
}

TEST(FaultEvents, ThePlaceOfAFaultIsReadAndWritten) {
  const auto e = parseEvent("fault hang @3 max.plan:2: hang at buf_alloc when x");
  ASSERT_TRUE(e);
  ASSERT_TRUE(e->faultAt);
  EXPECT_EQ(e->faultAt->ordinal, 3u);
  EXPECT_EQ(e->rule, "max.plan:2: hang at buf_alloc when x");
  EXPECT_EQ(formatEvent(*e), "fault hang @3 max.plan:2: hang at buf_alloc when x");
  const auto old = parseEvent("fault hang max.plan:2: hang at buf_alloc");
  ASSERT_TRUE(old);
  EXPECT_FALSE(old->faultAt);
  EXPECT_FALSE(parseEvent("fault hang @x rule"));
  EXPECT_FALSE(parseEvent("fault hang @3"));
}

class ThreadedRun : public ::testing::Test {
 protected:
  testing::ScratchDir dir;
  std::string write(const std::string& name, const std::string& text) const {
    const std::string path = (dir.path() / name).string();
    writeFileAtomically(path, text);
    return path;
  }
  /// The runner's events for one try of `file` under `plan`.
  static std::string events(const std::string& file, const std::string& plan, uint64_t attempt) {
    return runCommand((testing::binDir() / "gpufuzz-runner").string() +
                      " --backend sim --quiet --events-fd 1 --faults " + plan + " --try " +
                      std::to_string(attempt) + " " + file)
        .output;
  }
};

constexpr const char* kTwoContexts =
    "# model: device\n"
    "ctx_create c0\nbuf_create c0 b0\nbuf_destroy b0\nctx_destroy c0\n"
    "@1 ctx_create c1\n@1 buf_create c1 b1\n@1 buf_destroy b1\n@1 ctx_destroy c1\n";

TEST_F(ThreadedRun, OneTryIsTheSameEveryTimeAndTriesDiffer) {
  const std::string file = write("two.seq", kTwoContexts);
  std::set<std::string> orders;
  for (uint64_t attempt = 0; attempt < 16; ++attempt) {
    const std::string first = events(file, "none", attempt);
    EXPECT_NE(first.find("outcome pass"), std::string::npos) << first;
    EXPECT_EQ(events(file, "none", attempt), first) << "try " << attempt;
    orders.insert(first);
  }
  EXPECT_GE(orders.size(), 2u) << "every try ran the threads in one order";
}

TEST_F(ThreadedRun, TheThreadCounterIsTheCallersThread) {
  const std::string plan = write("t1.plan", "error at buf_alloc when thread == 1\n");
  const std::string out = events(write("two.seq", kTwoContexts), plan, 0);
  EXPECT_NE(out.find("outcome error 6 buf_create"), std::string::npos) << out;
}

TEST_F(ThreadedRun, AHangIsBlamedOnTheOperationThatHangsNotOnOneWaiting) {
  // Whichever try hangs, its hang is in buf_create: the allocation inside another thread's
  // context teardown. The other thread's operations finish or wait their turn meanwhile.
  testing::SimTrials trials(TeardownPolicy::Shipped, kRacesDir + "alloc-during-teardown.plan");
  const Sequence seq = parseSequence(
      "# model: device\nctx_create c0\nctx_destroy c0\n@1 ctx_create c1\n@1 buf_create c1 b0\n"
      "ctx_create c2\n",
      "race.seq");
  uint32_t hangs = 0;
  for (uint64_t attempt = 0; attempt < 48; ++attempt) {
    const TrialResult t = trials.runner.run(seq, TrialMode::Quick, std::nullopt, attempt);
    ASSERT_FALSE(t.harnessError) << *t.harnessError;
    if (t.outcome.cls == OutcomeClass::Pass) continue;
    ++hangs;
    EXPECT_EQ(t.outcome.cls, OutcomeClass::Hang) << outcomeText(t.outcome);
    EXPECT_EQ(t.outcome.op, "buf_create") << outcomeText(t.outcome);
    ASSERT_TRUE(t.outcome.at);
    EXPECT_EQ(t.outcome.at->ordinal, 4u);
    EXPECT_NE(t.outcome.fault.find("inside_ctx_destroy"), std::string::npos) << t.outcome.fault;
  }
  EXPECT_GE(hangs, 1u) << "no try of 48 hung";
  // One thread alone is never inside a call when it makes the next.
  const TrialResult alone = trials.runner.run(onOneThread(seq), TrialMode::Quick);
  EXPECT_EQ(alone.outcome.cls, OutcomeClass::Pass) << outcomeText(alone.outcome);
}

TEST_F(ThreadedRun, AShrinkKeepsTheRaceAndDropsTheRest) {
  testing::SimTrials trials(TeardownPolicy::Shipped, kRacesDir + "free-during-create.plan");
  const Sequence seq = parseSequence(
      "# model: device\nctx_create c0\nbuf_create c0 b0\nbuf_create c0 b1\nctx_create c3\n"
      "buf_destroy b1\nbuf_destroy b0\n@1 ctx_create c1\n@1 ctx_create c2\n@1 ctx_destroy c2\n",
      "race.seq");
  const TrialResult failed = trials.runner.runTries(
      seq, TrialMode::Quick, std::nullopt, 64,
      [](const TrialResult& t) { return t.outcome.cls == OutcomeClass::Error; });
  ASSERT_EQ(failed.outcome.cls, OutcomeClass::Error) << "no try of 64 failed";
  EXPECT_EQ(failed.executions, failed.attempt + 1) << "one execution a try, up to the failing one";
  Shrinker shrinker(trials.runner, 2);
  shrinker.setBaseAttempt(failed.attempt);
  const ShrinkResult r = shrinker.shrink(seq, failed.outcome);
  EXPECT_EQ(r.outcome.op, "buf_destroy");
  EXPECT_EQ(r.minimal.threadCount(), 2u) << printSequence(r.minimal);
  // The race needs a context and its buffer's free on one thread, a context made on the other.
  EXPECT_LE(r.minimal.ops.size(), 4u) << printSequence(r.minimal);
  // The failure's rate was measured before any candidate ran.
  EXPECT_GE(r.executions, Shrinker::kRateProbe);
}

TEST_F(ThreadedRun, AFailureNoTryMeetsAgainIsNotShrunk) {
  // Without a plan the race's sequence always passes: its one failure was a timing accident.
  testing::SimTrials trials(TeardownPolicy::Shipped, "none");
  const Sequence seq = parseSequence(
      "# model: device\nctx_create c0\nbuf_create c0 b0\nbuf_create c0 b1\nctx_create c3\n"
      "buf_destroy b1\nbuf_destroy b0\n@1 ctx_create c1\n@1 ctx_create c2\n@1 ctx_destroy c2\n",
      "race.seq");
  const RunOutcome once{OutcomeClass::Error, At{6}, "buf_destroy", "failed once", {}};
  Shrinker shrinker(trials.runner, 2);
  const ShrinkResult r = shrinker.shrink(seq, once);
  EXPECT_TRUE(r.unreproduced);
  EXPECT_TRUE(r.steps.empty()) << r.steps.front();
  EXPECT_EQ(printSequence(r.minimal), printSequence(seq));
  // Its rate was measured over the most tries a candidate gets, and no candidate ran.
  EXPECT_EQ(r.executions, Shrinker::kMostTries);
}

TEST_F(ThreadedRun, AHangMetOnlyInLaterTriesKeepsItsStacks) {
  testing::SimTrials trials(TeardownPolicy::Shipped, kRacesDir + "alloc-during-teardown.plan",
                            true);
  const Sequence seq = parseSequence(
      "# model: device\nctx_create c0\nctx_destroy c0\n@1 ctx_create c1\n@1 buf_create c1 b0\n",
      "race.seq");
  const RunOutcome hang{OutcomeClass::Hang, At{4}, "buf_create", "stuck", {}};
  FailureKey key = FailureKey::of(hang);
  key.fault = kRacesDir +
              "alloc-during-teardown.plan:3: hang at buf_alloc when "
              "inside_ctx_destroy >= 1";
  // From try 1: try 0, which takes the evidence anyway, never runs.
  Shrinker shrinker(trials.runner, 2);
  const Shrinker::Reproductions r = shrinker.reproductions(seq, key, 24, 1);
  ASSERT_GE(r.hits, 1u) << "no try of 24 hung";
  ASSERT_TRUE(r.evidence);
  // The runner's own: no debugger is needed.
  EXPECT_EQ(r.evidence->stacks.rfind(kRunnerStacksBy, 0), 0U) << r.evidence->stacks;
}

TEST(ThreadedCause, AConcurrentFailureIsAnotherCauseThanTheSameOneOnOneThread) {
  const Sequence threaded = parseSequence(
      "# model: device\nctx_create c0\nbuf_create c0 b0\n@1 buf_destroy b0\nctx_create c1\n",
      "t.seq");
  RunOutcome error{OutcomeClass::Error, At{3}, "buf_destroy", "failed", {}};
  const std::string apart = failureCause(error, threaded, TeardownPolicy::Shipped, "");
  const std::string alone = failureCause(error, onOneThread(threaded), TeardownPolicy::Shipped, "");
  EXPECT_NE(apart, alone);
  EXPECT_NE(apart.find("; concurrent"), std::string::npos) << apart;
  EXPECT_EQ(alone.find("concurrent"), std::string::npos) << alone;
  error.fault = "p.plan:1: error at buf_free when inside_ctx_create >= 1";
  EXPECT_NE(failureCause(error, threaded, TeardownPolicy::Shipped, "").find("; concurrent"),
            std::string::npos);
}

}  // namespace
}  // namespace gpufuzz
