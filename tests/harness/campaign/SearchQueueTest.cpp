// SearchQueueTest.cpp: guided search's queue keeps the passing runs that added a signal, as files
// with their parent and signals, reads them back, and mutates what it keeps.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "harness/campaign/SearchQueue.h"
#include "harness/campaign/SequenceSource.h"
#include "model/SequenceEdits.h"
#include "tests/ScratchDir.h"

namespace gpufuzz {
namespace {

std::string readAll(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(SearchQueue, KeepsRunsThatAddASignalWithTheirParentAndSignals) {
  const testing::ScratchDir dir;
  SearchQueue queue(dir.path() / "queue");
  const Sequence a = parseSequence("create r0\ndraw r0\n", "a.seq");
  EXPECT_GT(queue.offer(a, TrialResult{}, std::nullopt), 0U);
  EXPECT_EQ(queue.offer(a, TrialResult{}, std::nullopt), 0U) << "nothing new the second time";
  const Sequence b = parseSequence("create r0\ndraw r0\nread_back r0\n", "b.seq");
  EXPECT_GT(queue.offer(b, TrialResult{}, 0), 0U);
  EXPECT_EQ(queue.size(), 2U);
  const std::string kept = readAll(dir.path() / "queue" / SearchQueue::fileName(1));
  EXPECT_NE(kept.find("# note: parent id-000000.seq"), std::string::npos) << kept;
  EXPECT_NE(kept.find("# note: signal state read_back r[pending]"), std::string::npos) << kept;

  // A failing run's signals count, but it is not kept.
  TrialResult failed;
  failed.outcome.cls = OutcomeClass::Crash;
  failed.outcome.at = At{2};
  failed.outcome.op = "sync";
  const Sequence c = parseSequence("create r0\nsync r0\n", "c.seq");
  const std::size_t before = queue.signals();
  EXPECT_GT(queue.offer(c, failed, std::nullopt), 0U);
  EXPECT_GT(queue.signals(), before);
  EXPECT_EQ(queue.size(), 2U);

  // Read back: the same signals and entries; nothing the first queue saw is new again.
  SearchQueue again(dir.path() / "queue");
  EXPECT_EQ(again.load(dir.path() / "queue", a.lifecycle()), 2U);
  EXPECT_EQ(again.offer(b, TrialResult{}, std::nullopt), 0U);
  EXPECT_EQ(again.size(), 2U);
}

TEST(SearchQueue, MutantsOfKeptSequencesAreValid) {
  SearchQueue queue{std::filesystem::path()};
  GeneratorConfig config;
  EXPECT_FALSE(queue.mutant(config, 1).has_value()) << "an empty queue has nothing to mutate";
  for (uint64_t seed = 0; seed < 20; ++seed)
    queue.offer(generateSequence(config, seed), TrialResult{}, std::nullopt);
  ASSERT_GT(queue.size(), 0U);
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const auto m = queue.mutant(config, seed);
    ASSERT_TRUE(m.has_value());
    EXPECT_TRUE(isValid(m->first)) << printSequence(m->first);
    EXPECT_FALSE(m->first.ops.empty());
  }
}

TEST(SequenceSource, EveryIndexRunsTheStreamsSequenceAndMutantsFollowOnceNothingIsNew) {
  GeneratorConfig config;
  const testing::ScratchDir dir;
  const Sequence seed = parseSequence("create r0\nread_back r0\n", "s.seq");
  SequenceSource blind(config, false, {seed}, {});
  SequenceSource guided(config, true, {seed}, dir.path() / "queue");
  // Blind ignores seeds; guided runs them first, then the stream, index for index like blind.
  EXPECT_EQ(printSequence(blind.draw(0, 1000).seq), printSequence(generateSequence(config, 1000)));
  EXPECT_EQ(normalizedOperations(guided.draw(0, 7).seq), normalizedOperations(seed));
  for (uint64_t k = 1; k < 20; ++k) {
    EXPECT_EQ(printSequence(guided.draw(k, 1000 + k).seq),
              printSequence(generateSequence(config, 1000 + k)));
  }
  EXPECT_EQ(guided.mutantsAfter(1), 0U) << "no mutant before a run was seen";
  guided.observe(guided.draw(0, 7), TrialResult{});
  EXPECT_EQ(guided.queued(), 1U);
  // The seed added signals: fresh generation is not stale yet.
  EXPECT_EQ(guided.mutantsAfter(1), 0U);
  // Thirty-two fresh runs that add nothing: a mutant follows each sequence of the stream.
  for (int i = 0; i < 32; ++i)
    guided.observe(guided.draw(0, 7), TrialResult{});
  std::size_t mutants = 0;
  for (uint64_t s = 0; s < 50; ++s)
    mutants += guided.mutantsAfter(s);
  EXPECT_EQ(mutants, 50U);
  const std::optional<SequenceSource::Drawn> m = guided.mutant(3);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->parent, 0U);
  EXPECT_TRUE(isValid(m->seq));
  EXPECT_EQ(blind.mutantsAfter(1), 0U);
  EXPECT_FALSE(blind.mutant(1).has_value());
  // Blind counts the signals of what it runs, keeping nothing.
  blind.observe(blind.draw(0, 7), TrialResult{});
  EXPECT_GT(blind.signals(), 0U);
  EXPECT_EQ(blind.queued(), 0U);
}

TEST(SearchQueue, ListsTheErrorCodesAndRulesThatFailuresNamed) {
  SearchQueue queue{std::filesystem::path()};
  TrialResult failed;
  failed.outcome.cls = OutcomeClass::Error;
  failed.outcome.at = At{2};
  failed.outcome.op = "draw";
  failed.outcome.detail = "clFinish: CL_INVALID_COMMAND_QUEUE after VUID-vkCmdDraw-None-02699";
  queue.offer(parseSequence("create r0\ndraw r0\n", "a.seq"), failed, std::nullopt);
  EXPECT_EQ(queue.answers(),
            (std::vector<std::string>{"CL_INVALID_COMMAND_QUEUE", "VUID-vkCmdDraw-None-02699"}));
}

TEST(SearchQueue, HalfThePicksClimbFromTheNewestProgress) {
  SearchQueue queue{std::filesystem::path()};
  GeneratorConfig config;
  for (uint64_t seed = 0; seed < 40; ++seed)
    queue.offer(generateSequence(config, seed), TrialResult{}, std::nullopt);
  // One entry got a plan's counter further than any before it.
  TrialResult climbed;
  climbed.evidence.near.push_back("p.plan:1: crash at draw: condition 1's counter reached 5");
  const Sequence climber = parseSequence("create r0\ndraw r0\ndraw r0\n", "c.seq");
  ASSERT_GT(queue.offer(climber, climbed, std::nullopt), 0U);
  const uint64_t climberId = queue.size() - 1;
  std::size_t fromClimber = 0;
  for (uint64_t seed = 0; seed < 400; ++seed)
    fromClimber += queue.mutant(config, seed)->second == climberId ? 1 : 0;
  // A tournament of eight among 40-odd entries would pick it about one time in twenty.
  EXPECT_GT(fromClimber, 150U);
  EXPECT_LT(fromClimber, 260U);
}

}  // namespace
}  // namespace gpufuzz
