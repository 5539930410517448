// ExplainerTest.cpp: explanations of the seed's two conditions, learned through real child
// processes on sim under max-26.5.0, and the refusal to explain a passing sequence.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "harness/base/AtomicFile.h"
#include "harness/search/Explainer.h"
#include "harness/search/ExplanationReport.h"
#include "model/LifecycleModel.h"
#include "model/Sequence.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

using testing::binDir;
using testing::runCommand;
using testing::ScratchDir;

// The seed's condition 2: a context destroyed with work pending, then a third context.
constexpr const char* kCondition2 =
    "create r0\n"
    "draw r0\n"
    "destroy r0\n"
    "create r1\n"
    "create r2\n";
// The seed's condition 1: a context released before its buffers, then another context.
constexpr const char* kCondition1 =
    "create r0\n"
    "destroy r0\n"
    "create r1\n";

/// A trial runner on sim with a fixed deadline and a short confirmation, so that every
/// experiment that hangs costs little.
class ExplainTest : public ::testing::Test {
 protected:
  Explanation explain(const std::string& text, TeardownPolicy policy) {
    DeadlineSettings settings = DeadlineSettings::forBackend("sim");
    settings.fixed = Millis{150};
    settings.confirmFactor = 4;
    settings.confirmFloor = Millis{600};
    DeadlineCalibrator deadlines(settings);
    TrialSetup setup;
    setup.runner = (binDir() / "gpufuzz-runner").string();
    setup.backend = "sim";
    setup.policy = policy;
    setup.faults = "max-26.5.0";
    setup.workDir = work_.path();
    setup.captureStacks = false;
    TrialRunner trials(setup, deadlines);
    const Sequence seq = parseSequence(text, "test.seq");
    const TrialResult first = trials.run(seq, TrialMode::Quick);
    EXPECT_FALSE(first.harnessError.has_value());
    EXPECT_TRUE(first.outcome.failed()) << outcomeText(first.outcome);
    ExplainOptions options;
    options.confirmations = 2;
    return explainFailure(trials, 2, seq, first.outcome, options);
  }

  static const Explanation::Insertion* findInsertion(const Explanation& e, std::size_t position,
                                                     std::string_view op, const std::string& name) {
    for (const Explanation::Insertion& ins : e.insertions) {
      if (ins.position == position && ins.inserted.name() == op &&
          ins.inserted.names == std::vector<std::string>{name}) {
        return &ins;
      }
    }
    return nullptr;
  }

  ScratchDir work_;
};

TEST_F(ExplainTest, Condition2NeedsAThirdContextAndAWaitBeforeTheDestroyPreventsIt) {
  const Explanation e = explain(kCondition2, TeardownPolicy::NoDestroySync);
  ASSERT_EQ(e.outcome.cls, OutcomeClass::Hang);
  ASSERT_TRUE(e.outcome.at.has_value());
  EXPECT_EQ(e.outcome.at->ordinal, 5U);
  EXPECT_TRUE(e.shrinkSteps.empty());
  EXPECT_TRUE(e.oneMinimal);
  EXPECT_EQ(e.inconclusive, 0U);
  EXPECT_EQ(e.reproduced, 2U);

  // Every step is necessary, and each is annotated with what it establishes.
  ASSERT_EQ(e.removals.size(), 5U);
  for (const Explanation::Removal& r : e.removals) {
    EXPECT_TRUE(r.necessary()) << "step " << r.index + 1;
  }
  EXPECT_EQ(e.facts[1].role, StepRole::QueuesWork);
  EXPECT_EQ(e.facts[2].role, StepRole::DestroysWithPending);
  EXPECT_EQ(e.facts[4].role, StepRole::IntroducesContext);
  EXPECT_EQ(e.facts[4].context, 2U);

  // A wait for r0 right before its destroy prevents it; anything after the destroy does not.
  for (std::string_view wait : {"sync", "read_back"}) {
    const auto* before = findInsertion(e, 2, wait, "r0");
    ASSERT_NE(before, nullptr);
    EXPECT_EQ(before->experiment.verdict, EditVerdict::Prevents);
    const auto* early = findInsertion(e, 1, wait, "r0");
    ASSERT_NE(early, nullptr);
    EXPECT_EQ(early->experiment.verdict, EditVerdict::Keeps);  // the draw comes after it
  }
  const auto preventing = e.preventing();
  EXPECT_EQ(preventing.size(), 2U);

  // The draw's arguments are free; the contexts are counted.
  std::vector<std::string> freeDrawArguments;
  for (const Explanation::Argument& a : e.arguments) {
    if (a.index == 1 && a.isFree()) freeDrawArguments.push_back(a.name);
  }
  EXPECT_EQ(freeDrawArguments, (std::vector<std::string>{"triangles", "seed"}));
  EXPECT_EQ(e.contexts.introduced, 3U);
  EXPECT_TRUE(e.contexts.allNeeded);
  EXPECT_EQ(e.contexts.failingContext, 2U);
  // One more context earlier moves the failure to another step, still in the third context.
  EXPECT_EQ(e.contexts.failingContextsWithOneMore, std::vector<uint32_t>{2});
  EXPECT_TRUE(e.contexts.failedElsewhereWithOneMore);

  const std::string md = explanationMarkdown(explanationReport(e));
  EXPECT_NE(md.find("insert `sync r0` before 3 (destroy r0)"), std::string::npos) << md;
  EXPECT_NE(md.find("Needs at least 3 contexts"), std::string::npos) << md;
  // The seed's condition 2 is the plan's second rule.
  EXPECT_NE(md.find("Planted by the fault plan's rule `max-26.5.0:5: hang at buf_alloc"),
            std::string::npos)
      << md;
}

TEST_F(ExplainTest, Condition1IsPreventedByNoSingleWait) {
  const Explanation e = explain(kCondition1, TeardownPolicy::ContextFirst);
  ASSERT_EQ(e.outcome.cls, OutcomeClass::Hang);
  ASSERT_TRUE(e.outcome.at.has_value());
  EXPECT_EQ(e.outcome.at->ordinal, 3U);
  EXPECT_EQ(e.inconclusive, 0U);

  ASSERT_EQ(e.removals.size(), 3U);
  for (const Explanation::Removal& r : e.removals) {
    EXPECT_TRUE(r.necessary()) << "step " << r.index + 1;
  }
  EXPECT_EQ(e.facts[1].role, StepRole::DestroysWithLiveBuffers);

  // Waits were tried (the renderer's destructor already waits) and none of them prevents it.
  std::size_t waitsTried = 0;
  for (const Explanation::Insertion& ins : e.insertions) {
    if (ins.inserted.name() != "sync" && ins.inserted.name() != "read_back") continue;
    ++waitsTried;
    EXPECT_EQ(ins.experiment.verdict, EditVerdict::Keeps) << ins.describe(e.minimal);
  }
  EXPECT_GT(waitsTried, 0U);
  for (const Explanation::Insertion* ins : e.preventing()) {
    EXPECT_NE(ins->inserted.name(), "sync");
    EXPECT_NE(ins->inserted.name(), "read_back");
  }
  EXPECT_EQ(e.contexts.introduced, 2U);
  EXPECT_TRUE(e.contexts.allNeeded);

  const std::string md = explanationMarkdown(explanationReport(e));
  EXPECT_NE(md.find("No single `sync` or `read_back` prevents it"), std::string::npos) << md;
}

// The lifecycle replay speaks the renderer's roles for the built-in models, and the model's own
// roles (which causes count, through roleKey) for any other model.
TEST(LifecycleFacts, RendererRolesForBuiltInModelsAndModelRolesOtherwise) {
  const Sequence renderer = parseSequence(kCondition2, "c2.seq");
  const std::vector<StepFacts> facts = lifecycleFacts(renderer, TeardownPolicy::NoDestroySync);
  ASSERT_EQ(facts.size(), 5U);
  EXPECT_EQ(facts[1].role, StepRole::QueuesWork);
  EXPECT_EQ(facts[2].role, StepRole::DestroysWithPending);
  for (const StepFacts& f : facts) {
    EXPECT_TRUE(f.modelRole.empty()) << f.establishes;
    EXPECT_EQ(roleKey(f), stepRoleName(f.role));
  }

  const LifecycleModel& lab = internModel(parseModel(
      "model lab\nresource pool prefix p\nresource stream prefix s\n"
      "resource buf prefix b owner pool\nop pool_create -> pool\nop pool_destroy pool!\n"
      "op stream_create -> stream\nop stream_destroy stream!\nop alloc pool stream -> buf\n"
      "op free buf!\nop launch stream buf +pending(stream)\nrelease buf stream pool\n",
      "lab.model"));
  const Sequence seq = parseSequence(
      "pool_create p0\nstream_create s0\nalloc p0 s0 b0\nlaunch s0 b0\npool_destroy p0\n"
      "stream_destroy s0\n",
      "lab.seq", &lab);
  const std::vector<StepFacts> model = lifecycleFacts(seq, TeardownPolicy::Shipped);
  ASSERT_EQ(model.size(), 6U);
  EXPECT_EQ(model[0].modelRole, "introduces-pool");
  EXPECT_EQ(model[3].modelRole, "sets-pending-stream");
  EXPECT_EQ(model[4].modelRole, "ends-pool-owning-buf");
  EXPECT_EQ(model[4].establishes, "ends pool p0 while 1 buf of it is alive (b0)");
  EXPECT_EQ(model[5].modelRole, "ends-stream-pending");
  for (const StepFacts& f : model) {
    EXPECT_EQ(f.role, StepRole::Other);
    EXPECT_FALSE(f.context.has_value());
    EXPECT_EQ(roleKey(f), f.modelRole);
  }
}

TEST_F(ExplainTest, APassingSequenceIsBadInput) {
  const std::filesystem::path file = work_.path() / "passes.seq";
  writeFileAtomically(file, "# policy: shipped\ncreate r0\ndraw r0\ndestroy r0\ncreate r1\n");
  const auto r = runCommand((binDir() / "gpufuzz").string() + " explain " + file.string() +
                            " --backend sim --deadline 150 --no-stacks --out " +
                            (work_.path() / "out").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("passes.seq: the sequence passes on sim (policy shipped, faults "
                          "max-26.5.0): nothing to explain"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(work_.path() / "out"));

  DeadlineCalibrator deadlines(DeadlineSettings::forBackend("sim"));
  TrialRunner trials(TrialSetup{}, deadlines);
  EXPECT_THROW(explainFailure(trials, 1, parseSequence("create r0\n", "x.seq"), RunOutcome{}),
               std::invalid_argument);
}

TEST_F(ExplainTest, TheCommandWritesBesideAFindingAndReports) {
  const std::filesystem::path finding = work_.path() / "hang-create-000000";
  writeFileAtomically(finding / "minimal.seq",
                      std::string("# policy: context-first\n") + kCondition1);
  writeFileAtomically(finding / "finding.json", "{}\n");
  const std::filesystem::path report = work_.path() / "report.json";
  const auto r = runCommand((binDir() / "gpufuzz").string() + " explain " +
                            (finding / "minimal.seq").string() +
                            " --backend sim --deadline 150 --no-stacks --confirmations 1 "
                            "--jobs 2 --no-shrink --report " +
                            report.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string md = readFile(finding / "explanation.md");
  EXPECT_NE(r.output.find(md), std::string::npos) << "stdout shows the written explanation";
  EXPECT_NE(md.find("# Explanation: hang at 3 (create)"), std::string::npos) << md;
  const std::string json = readFile(report);
  for (const char* field :
       {"\"command\": \"explain\"", "\"policy\": \"context-first\"", "\"explanation\": {",
        "\"necessary\": [", "\"free_arguments\": [", "\"preventing\": []", "\"repetition\": [",
        "\"reproduced\": 1", "\"confirmations\": 1", "\"minimal_sequence\": "}) {
    EXPECT_NE(json.find(field), std::string::npos) << field << "\n" << json;
  }
}

}  // namespace
}  // namespace gpufuzz
