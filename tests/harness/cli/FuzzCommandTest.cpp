// FuzzCommandTest.cpp: gpufuzz fuzz end to end on sim, with fixed seeds and bounded runs: it finds
// the seed's two conditions and the strict-lifetimes errors of the weakened policies, shrinks each
// to a 1-minimal sequence (checked here by trying every shrink candidate again), and finds nothing
// in the shipped renderer.
#include <gtest/gtest.h>

#include <memory>
#include <regex>

#include "harness/base/AtomicFile.h"
#include "harness/search/Shrinker.h"
#include "model/SequenceEdits.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

struct Campaign {
  testing::ScratchDir dir;
  testing::CommandResult result;
  std::vector<Sequence> minimal;  // every finding's minimal.seq
  std::vector<std::string> ids;
};

/// `deadline`: the fixed per-operation deadline in ms; a campaign that must find nothing takes a
/// long one, since some generated operations (textures of 2000 x 2000) take 150 ms on this VM.
std::unique_ptr<Campaign> fuzz(const std::string& policy, const std::string& faults, uint64_t seed,
                               int runs, int deadline = 150) {
  auto owned = std::make_unique<Campaign>();
  Campaign& c = *owned;
  const auto out = c.dir.path() / "findings";
  c.result = testing::runCommand(
      (testing::binDir() / "gpufuzz").string() +
      " fuzz --backend sim --quiet --jobs 2 --deadline " + std::to_string(deadline) +
      " --confirmations 2 --policy " + policy + " --faults " + faults + " --seed " +
      std::to_string(seed) + " --runs " + std::to_string(runs) + " --out " + out.string() +
      " --report " + (c.dir.path() / "report.json").string());
  if (std::filesystem::exists(out)) {
    for (const auto& entry : std::filesystem::directory_iterator(out)) {
      if (!std::filesystem::exists(entry.path() / "minimal.seq")) continue;
      c.minimal.push_back(loadSequence((entry.path() / "minimal.seq").string()));
      c.ids.push_back(entry.path().filename().string());
    }
  }
  return owned;
}

/// No single removal or simplification of `seq` fails as `key`: the shrinker's contract.
void expectOneMinimal(const Sequence& seq, TeardownPolicy policy, const std::string& faults,
                      OutcomeClass cls, const std::string& op) {
  testing::SimTrials trials(policy, faults);
  const TrialResult itself = trials.runner.run(seq, TrialMode::Quick);
  EXPECT_EQ(itself.outcome.cls, cls) << outcomeText(itself.outcome);
  EXPECT_EQ(itself.outcome.op, op) << outcomeText(itself.outcome);
  // The same failure: the same class and operation, planted by the same rule.
  const FailureKey key = FailureKey::of(itself.outcome);
  for (const auto& [edit, candidate] : shrinkCandidates(seq)) {
    const TrialResult t = trials.runner.run(candidate, TrialMode::Quick);
    EXPECT_FALSE(key.matches(t.outcome))
        << "not 1-minimal: " << edit.describe(seq) << " still fails: " << outcomeText(t.outcome);
  }
}

const Sequence* findingWith(const Campaign& c, OutcomeClass cls, const std::string& op) {
  for (const Sequence& s : c.minimal) {
    const Expectation e = s.expectationFor("sim");
    if (e.cls == cls && e.at && !e.at->isEnd() && s.ops[e.at->ordinal - 1].name() == op) return &s;
  }
  return nullptr;
}

TEST(Fuzz, ContextFirstFindsTheSeedsHangShrunkToCreateDestroyCreate) {
  const auto c = fuzz("context-first", "max-26.5.0", 1, 40);
  EXPECT_EQ(c->result.status, 1) << c->result.output;
  bool seedShape = false;
  for (const Sequence& s : c->minimal) {
    seedShape = seedShape || normalizedOperations(s) == "create r0\ndestroy r0\ncreate r1\n";
    // Every finding replays with no options: its directives say everything.
    EXPECT_EQ(s.directives.policy, "context-first");
    EXPECT_EQ(s.directives.backend, "sim");
    EXPECT_TRUE(s.directives.expect.has_value());
  }
  EXPECT_TRUE(seedShape) << c->result.output;
  const std::string report = readFile(c->dir.path() / "report.json");
  EXPECT_NE(report.find("\"sequence\": \"create r0\\ndestroy r0\\ncreate r1\\n\""),
            std::string::npos)
      << report;
}

TEST(Fuzz, NoDestroySyncFindsTheNarrowerSecondCondition) {
  const auto c = fuzz("no-destroy-sync", "max-26.5.0", 7, 120);
  EXPECT_EQ(c->result.status, 1) << c->result.output;
  const Sequence* s = findingWith(*c, OutcomeClass::Hang, "create");
  ASSERT_NE(s, nullptr) << c->result.output;
  // It needs a renderer dropped with queued work and a third context.
  uint32_t creates = 0;
  for (const Operation& op : s->ops)
    creates += op.name() == "create" ? 1 : 0;
  EXPECT_EQ(creates, 3U) << normalizedOperations(*s);
  expectOneMinimal(*s, TeardownPolicy::NoDestroySync, "max-26.5.0", OutcomeClass::Hang, "create");
}

TEST(Fuzz, StrictLifetimesCatchesNoTextureWait) {
  const auto c = fuzz("no-texture-wait", "strict-lifetimes", 3, 120);
  EXPECT_EQ(c->result.status, 1) << c->result.output;
  const Sequence* s = findingWith(*c, OutcomeClass::Error, "set_textures");
  ASSERT_NE(s, nullptr) << c->result.output;
  expectOneMinimal(*s, TeardownPolicy::NoTextureWait, "strict-lifetimes", OutcomeClass::Error,
                   "set_textures");
}

TEST(Fuzz, StrictLifetimesCatchesNoDestroySync) {
  const auto c = fuzz("no-destroy-sync", "strict-lifetimes", 3, 120);
  EXPECT_EQ(c->result.status, 1) << c->result.output;
  // Queued work (a draw or a texture upload) released unwaited, by a destroy or by the release
  // at the end: one planted rule, one cause, one finding, its smallest witness as minimal.seq.
  ASSERT_EQ(c->minimal.size(), 1U) << c->result.output;
  const Sequence& s = c->minimal[0];
  const std::string ops = normalizedOperations(s);
  EXPECT_TRUE(ops == "create r0\ndraw r0\n" || ops == "create r0\nset_textures r0\n" ||
              ops == "create r0\ndraw r0\ndestroy r0\n" ||
              ops == "create r0\nset_textures r0\ndestroy r0\n")
      << ops;
  ASSERT_TRUE(s.directives.expect.has_value());
  EXPECT_EQ(s.directives.expect->cls, OutcomeClass::Error);
  const bool atEnd = s.directives.expect->at && s.directives.expect->at->isEnd();
  expectOneMinimal(s, TeardownPolicy::NoDestroySync, "strict-lifetimes", OutcomeClass::Error,
                   atEnd ? "end" : "destroy");
}

TEST(Fuzz, ShippedRendererSurvivesBothRuntimes) {
  for (const char* faults : {"max-26.5.0", "strict-lifetimes"}) {
    // 5 s: a texture upload of 3 x 2048^2 took 1.2-1.5 s with 8 tests on 2 cores; 1 s made it
    // a `slow` finding. Nothing here hangs, so the long deadline costs no time.
    const auto c = fuzz("shipped", faults, 11, 300, 5000);
    EXPECT_EQ(c->result.status, 0) << faults << "\n" << c->result.output;
    EXPECT_TRUE(c->minimal.empty()) << faults;
    const std::string report = readFile(c->dir.path() / "report.json");
    EXPECT_TRUE(std::regex_search(report, std::regex("\"sequences\": 300"))) << report;
  }
}

TEST(Fuzz, SameSeedSameSequences) {
  const auto a = fuzz("no-texture-wait", "strict-lifetimes", 5, 60);
  const auto b = fuzz("no-texture-wait", "strict-lifetimes", 5, 60);
  EXPECT_FALSE(a->ids.empty());
  EXPECT_EQ(a->ids, b->ids);
}

TEST(Fuzz, BadInputIsExitStatusTwoAndRunsNothing) {
  testing::ScratchDir dir;
  const std::string gpufuzz = (testing::binDir() / "gpufuzz").string();
  EXPECT_EQ(testing::runCommand(gpufuzz + " fuzz --bogus").status, 2);
  EXPECT_EQ(testing::runCommand(gpufuzz + " fuzz --policy nope --runs 1").status, 2);
  EXPECT_EQ(testing::runCommand(gpufuzz + " fuzz --faults /nonexistent.plan --runs 1").status, 2);
  for (const char* threads : {"0", "9", "x", "-1"}) {
    const auto t = testing::runCommand(gpufuzz + " fuzz --runs 1 --threads " + threads);
    EXPECT_EQ(t.status, 2) << threads << ": " << t.output;
    EXPECT_NE(t.output.find("--threads"), std::string::npos) << t.output;
  }
  writeFileAtomically(dir.path() / "bad.seq", "create r0\ndraw r9\n");
  const auto r = testing::runCommand(gpufuzz + " replay " + (dir.path() / "bad.seq").string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("bad.seq:2:"), std::string::npos) << r.output;
  writeFileAtomically(dir.path() / "pass.seq", "create r0\n");
  EXPECT_EQ(testing::runCommand(gpufuzz + " shrink " + (dir.path() / "pass.seq").string()).status,
            2);
}

}  // namespace
}  // namespace gpufuzz
