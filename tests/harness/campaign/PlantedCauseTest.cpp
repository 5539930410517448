// PlantedCauseTest.cpp: a failure a fault-plan rule planted names its rule. The runner says
// which rule fired (the `fault` event) before its effect; the supervisor attributes the failure
// to the rule whose effect it is, in the operation that failed; the rule is the finding's cause,
// whichever operation reached its device call; and a campaign under a plan whose one rule is
// reached from two kinds of operation writes one finding, the other kind kept as a variant.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "harness/base/AtomicFile.h"
#include "harness/protocol/Events.h"
#include "harness/search/Cause.h"
#include "harness/supervise/Supervisor.h"
#include "model/SequenceEdits.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

namespace fs = std::filesystem;

TEST(FaultEvent, RoundTripsAndComesOnlyInsideAnOperation) {
  Event fault;
  fault.kind = Event::Kind::Fault;
  fault.op = "hang";
  fault.rule = "two.plan:2: hang at sync when pending >= 3";
  EXPECT_EQ(formatEvent(fault), "fault hang two.plan:2: hang at sync when pending >= 3");
  const auto parsed = parseEvent(formatEvent(fault));
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->kind, Event::Kind::Fault);
  EXPECT_EQ(parsed->op, "hang");
  EXPECT_EQ(parsed->rule, fault.rule);
  EXPECT_FALSE(parseEvent("fault hang").has_value()) << "a fault names its rule";
  EXPECT_FALSE(parseEvent("fault").has_value());

  EventOrder order;
  EXPECT_EQ(order.accept(*parseEvent("start 1")), "");
  EXPECT_EQ(order.accept(fault), "a fault outside an operation");
  EXPECT_EQ(order.accept(*parseEvent("begin 1 create")), "");
  EXPECT_EQ(order.accept(fault), "");
}

FaultFired fired(uint32_t at, const char* effect, const char* rule) {
  return FaultFired{At{at}, effect, rule};
}

TEST(PlantedBy, TheRuleWhoseEffectTheFailureIsInTheOperationThatFailed) {
  const RunOutcome hangAt3{OutcomeClass::Hang, At{3}, "destroy", "", {}};
  // The hang rule that fired in operation 3.
  EXPECT_EQ(plantedBy(hangAt3, {fired(1, "delay", "p:1"), fired(3, "hang", "p:2")}), "p:2");
  // A rule that fired elsewhere, or whose effect is not a hang, planted nothing here: the hang
  // is the system's own.
  EXPECT_EQ(plantedBy(hangAt3, {fired(2, "hang", "p:2")}), "");
  EXPECT_EQ(plantedBy(hangAt3, {fired(3, "corrupt", "p:3")}), "");
  EXPECT_EQ(plantedBy(hangAt3, {}), "");
  // A long delay in the stuck operation looks like a hang, and is one the plan planted.
  EXPECT_EQ(plantedBy(hangAt3, {fired(3, "delay", "p:1")}), "p:1");

  const RunOutcome crashAt2{OutcomeClass::Crash, At{2}, "draw", "SIGSEGV", {}};
  EXPECT_EQ(plantedBy(crashAt2, {fired(2, "crash", "p:4")}), "p:4");
  EXPECT_EQ(plantedBy(crashAt2, {fired(2, "error", "p:5")}), "");
  const RunOutcome errorAtEnd{OutcomeClass::Error, At{}, "end", "buf_free failed", {}};
  EXPECT_EQ(plantedBy(errorAtEnd, {FaultFired{At{}, "error", "p:5"}}), "p:5");

  // A mismatch is planted by the first corruption before it, a leak by the first leaking rule.
  const RunOutcome mismatchAt4{OutcomeClass::Mismatch, At{4}, "read_back", "pixel 0", {}};
  EXPECT_EQ(plantedBy(mismatchAt4, {fired(2, "corrupt", "p:6"), fired(3, "delay", "p:1")}), "p:6");
  EXPECT_EQ(plantedBy(mismatchAt4, {fired(2, "leak", "p:7")}), "");
  const RunOutcome leak{OutcomeClass::Leak, std::nullopt, "", "1 buffer", {}};
  EXPECT_EQ(plantedBy(leak, {fired(2, "leak", "p:7"), fired(3, "leak", "p:8")}), "p:7");
  // A rule is named once however often it fired: three firings and four are one cause.
  EXPECT_EQ(
      plantedBy(leak, {fired(1, "leak", "p:7"), fired(2, "leak", "p:7"), fired(4, "leak", "p:7")}),
      plantedBy(leak, {fired(2, "leak", "p:7"), fired(3, "leak", "p:7")}));
  EXPECT_EQ(plantedBy(mismatchAt4, {fired(1, "corrupt", "p:6"), fired(2, "corrupt", "p:6"),
                                    fired(3, "corrupt", "p:9")}),
            "p:6");
  EXPECT_EQ(plantedBy(RunOutcome{}, {fired(1, "hang", "p:2")}), "") << "a pass";
}

/// Trials on sim under the shipped renderer and a plan of one rule that crashes the second
/// upload of a context: a `set_textures` and a `draw` both make that upload.
struct SecondUploadCrashes {
  testing::ScratchDir work;
  fs::path plan = [this] {
    const fs::path p = work.path() / "second-upload.plan";
    writeFileAtomically(
        p, "# the second upload of a context dies\ncrash at copy_to_device when ctx_calls >= 1\n");
    return p;
  }();
  DeadlineCalibrator deadlines{testing::simDeadlines(Millis{1000})};
  TrialRunner runner{
      testing::SimTrials::setupFor(TeardownPolicy::Shipped, plan.string(), work.path()), deadlines};
  std::string rule() const {
    return plan.string() + ":2: crash at copy_to_device when ctx_calls >= 1";
  }
};

TEST(PlantedCause, ARuleReachedFromTwoOperationsIsOneCause) {
  SecondUploadCrashes trials;
  const Sequence textures = parseSequence("create a\nset_textures a\n", "textures.seq");
  const Sequence draw = parseSequence("create a\ndraw a\n", "draw.seq");
  const TrialResult t = trials.runner.run(textures, TrialMode::Quick);
  const TrialResult d = trials.runner.run(draw, TrialMode::Quick);
  ASSERT_EQ(t.outcome.cls, OutcomeClass::Crash) << outcomeText(t.outcome);
  ASSERT_EQ(d.outcome.cls, OutcomeClass::Crash) << outcomeText(d.outcome);
  EXPECT_EQ(t.outcome.op, "set_textures");
  EXPECT_EQ(d.outcome.op, "draw");
  EXPECT_EQ(t.outcome.fault, trials.rule());
  EXPECT_EQ(d.outcome.fault, trials.rule());
  EXPECT_EQ(failureKind(t.outcome), failureKind(d.outcome));
  const std::string cause = failureCause(t.outcome, textures, TeardownPolicy::Shipped, "");
  EXPECT_EQ(cause, failureCause(d.outcome, draw, TeardownPolicy::Shipped, ""));
  EXPECT_EQ(cause, "crash planted by " + trials.rule());

  // Without the plan's word, the two are told apart by operation as before.
  RunOutcome unplantedT = t.outcome, unplantedD = d.outcome;
  unplantedT.fault.clear();
  unplantedD.fault.clear();
  EXPECT_NE(failureCause(unplantedT, textures, TeardownPolicy::Shipped, ""),
            failureCause(unplantedD, draw, TeardownPolicy::Shipped, ""));
  EXPECT_NE(failureKind(unplantedT), failureKind(unplantedD));

  // A sequence that passes names no rule; so does one where a rule fired without failing it.
  const TrialResult pass =
      trials.runner.run(parseSequence("create a\n", "one.seq"), TrialMode::Quick);
  EXPECT_EQ(pass.outcome.cls, OutcomeClass::Pass) << outcomeText(pass.outcome);
  EXPECT_EQ(pass.outcome.fault, "");
}

TEST(PlantedCause, ACampaignWritesOneFindingForTheRuleWithTheOtherOperationAsAVariant) {
  SecondUploadCrashes trials;
  const fs::path out = trials.work.path() / "findings";
  const testing::CommandResult r = testing::runCommand(
      (testing::binDir() / "gpufuzz").string() +
      " fuzz --backend sim --quiet --no-explain --jobs 2 --deadline 1000 --confirmations 1"
      " --policy shipped --faults " +
      trials.plan.string() + " --seed 5 --runs 60 --out " + out.string());
  EXPECT_EQ(r.status, 1) << r.output;
  std::vector<fs::path> findings;
  for (const auto& entry : fs::directory_iterator(out)) {
    if (fs::exists(entry.path() / "minimal.seq")) findings.push_back(entry.path());
  }
  ASSERT_EQ(findings.size(), 1U) << r.output;
  const std::string json = readFile(findings[0] / "finding.json");
  EXPECT_NE(json.find("\"planted_by\": \"" + trials.rule() + "\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"cause\": \"crash planted by " + trials.rule() + "\""), std::string::npos)
      << json;
  EXPECT_EQ(json.find("\"hits\": 1,"), std::string::npos) << "one hit only:\n" << json;
  // Both ways into the rule were found: the minimal sequence and a variant fail at different
  // operations.
  std::set<std::string> failingOps;
  const auto failingOp = [](const Sequence& s) {
    const Expectation e = s.expectationFor("sim");
    return e.at && !e.at->isEnd() ? std::string(s.ops[e.at->ordinal - 1].name())
                                  : std::string("end");
  };
  failingOps.insert(failingOp(loadSequence((findings[0] / "minimal.seq").string())));
  ASSERT_TRUE(fs::is_directory(findings[0] / "variants")) << r.output;
  for (const auto& v : fs::directory_iterator(findings[0] / "variants"))
    failingOps.insert(failingOp(loadSequence(v.path().string())));
  EXPECT_TRUE(failingOps.count("draw") && failingOps.count("set_textures"))
      << "failing operations: " << failingOps.size();
  // Its replay says which rule planted it.
  const testing::CommandResult replay =
      testing::runCommand((testing::binDir() / "gpufuzz").string() + " replay " +
                          (findings[0] / "minimal.seq").string());
  EXPECT_EQ(replay.status, 0) << replay.output;
  EXPECT_NE(replay.output.find("planted by " + trials.rule()), std::string::npos) << replay.output;
}

/// The finding folders of campaign output `out`.
std::vector<fs::path> findingsIn(const fs::path& out) {
  std::vector<fs::path> findings;
  for (const auto& entry : fs::directory_iterator(out)) {
    if (fs::exists(entry.path() / "minimal.seq")) findings.push_back(entry.path());
  }
  std::sort(findings.begin(), findings.end());
  return findings;
}

// A leak rule that fires several times is one bug: keyed by every firing, one rule gave ten
// causes in 3,000 sequences, and no shrink could remove a firing. Two leak rules, each firing
// several times a run, are two findings, each shrunk until no single removal leaks by its rule.
// A run that both spoiled is the first one's: bare contexts (--ops all) let either fire first.
TEST(PlantedCause, EachLeakRuleIsOneFindingShrunkOneMinimalHoweverOftenItFires) {
  testing::ScratchDir work;
  const fs::path plan = work.path() / "two-leaks.plan";
  writeFileAtomically(plan,
                      "leak at buf_free when calls >= 2   # every free after the second\n"
                      "leak at ctx_destroy when calls >= 1   # every context after the first\n");
  const fs::path out = work.path() / "findings";
  const testing::CommandResult r = testing::runCommand(
      (testing::binDir() / "gpufuzz").string() +
      " fuzz --backend sim --quiet --no-explain --jobs 2 --deadline 1000 --confirmations 1"
      " --policy shipped --ops all --faults " +
      plan.string() + " --seed 11 --runs 400 --out " + out.string());
  EXPECT_EQ(r.status, 1) << r.output;
  const std::vector<fs::path> findings = findingsIn(out);
  ASSERT_EQ(findings.size(), 2U) << r.output;
  std::set<std::string> causes;
  DeadlineCalibrator deadlines{testing::simDeadlines(Millis{1000})};
  TrialRunner runner{
      testing::SimTrials::setupFor(TeardownPolicy::Shipped, plan.string(), work.path()), deadlines};
  for (const fs::path& f : findings) {
    const std::string cause = readFile(f / "cause");
    causes.insert(cause);
    EXPECT_EQ(cause.find(" + "), std::string::npos) << "one rule named once: " << cause;
    const Sequence minimal = loadSequence((f / "minimal.seq").string());
    const TrialResult again = runner.run(minimal, TrialMode::Quick);
    ASSERT_EQ(again.outcome.cls, OutcomeClass::Leak) << outcomeText(again.outcome);
    // 1-minimal: without any one operation, the rule leaks no more.
    for (std::size_t i = 0; i < minimal.ops.size(); ++i) {
      const Sequence smaller = removeOperation(minimal, i);
      if (smaller.ops.empty()) continue;
      const TrialResult t = runner.run(smaller, TrialMode::Quick);
      EXPECT_FALSE(t.outcome.cls == OutcomeClass::Leak && t.outcome.fault == again.outcome.fault)
          << f << " still leaks without operation " << i + 1 << ":\n"
          << printSequence(minimal);
    }
  }
  EXPECT_TRUE(std::any_of(causes.begin(), causes.end(),
                          [](const std::string& c) { return c.find("buf_free") != c.npos; }));
  EXPECT_TRUE(std::any_of(causes.begin(), causes.end(),
                          [](const std::string& c) { return c.find("ctx_destroy") != c.npos; }));
}

}  // namespace
}  // namespace gpufuzz
