// MutationsTest.cpp: guided search's mutants are valid under their model by construction, for
// every built-in model, with threads and marks; edge values stay inside an argument's bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "model/Mutations.h"
#include "model/SequenceEdits.h"

namespace gpufuzz {
namespace {

TEST(Mutations, EveryMutantOfEveryBuiltInModelIsValidAndMostDiffer) {
  for (const std::string& name : builtinModelNames()) {
    for (const unsigned threads : {1U, 3U}) {
      GeneratorConfig config;
      config.model = &builtinModel(name);
      config.threads = threads;
      config.maxOps = 30;
      if (name != "renderer") config.inject.add(FailWord::Oom);
      std::size_t changed = 0;
      const std::size_t kMutants = 150;
      for (uint64_t seed = 0; seed < kMutants; ++seed) {
        const Sequence parent = generateSequence(config, seed);
        const Sequence donor = generateSequence(config, seed + 1000);
        std::string how;
        const Sequence child = mutate(parent, donor, config, seed * 7 + 1, &how);
        ASSERT_TRUE(isValid(child)) << name << " seed " << seed << ": " << how << "\n"
                                    << printSequence(child);
        EXPECT_LE(child.ops.size(), config.maxOps) << how;
        EXPECT_FALSE(child.ops.empty()) << how;
        EXPECT_LE(child.threadCount(), std::max(threads, parent.threadCount()));
        if (child.ops != parent.ops) ++changed;
      }
      EXPECT_GE(changed, kMutants * 9 / 10) << name << ", threads " << threads;
    }
  }
}

TEST(Mutations, AnArgumentOverTheWholeOfUint64StaysInItsBounds) {
  const LifecycleModel& model = internModel(
      parseModel("model wide\nresource thing prefix t\n"
                 "op make -> thing n=0 (0..18446744073709551615) m=5 (3..9)\nop drop thing!\n"
                 "release thing\n",
                 "wide.model"));
  GeneratorConfig config;
  config.model = &model;
  const Sequence parent = generateSequence(config, 1);
  std::set<uint64_t> seen;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    const Sequence child = mutate(parent, parent, config, seed);
    ASSERT_TRUE(isValid(child)) << printSequence(child);
    for (const Operation& op : child.ops) {
      if (op.name() != "make") continue;
      seen.insert(op.args[0]);
      EXPECT_GE(op.args[1], 3U);
      EXPECT_LE(op.args[1], 9U);
    }
  }
  EXPECT_TRUE(seen.contains(UINT64_MAX)) << "the maximum is an edge value";
  EXPECT_TRUE(seen.contains(uint64_t{1} << 32U));
}

TEST(Mutations, TheSameSeedGivesTheSameMutant) {
  GeneratorConfig config;
  config.model = &builtinModel("opencl");
  const Sequence parent = generateSequence(config, 5);
  EXPECT_EQ(printSequence(mutate(parent, parent, config, 9)),
            printSequence(mutate(parent, parent, config, 9)));
}

TEST(Mutations, RepeatingALifeCopiesANameAndWhatWasMadeFromItUnderNewNames) {
  const LifecycleModel& model =
      internModel(parseModel("model own\nresource box prefix x\nresource item prefix i\n"
                             "op open -> box\nop put box -> item\nop poke item\nop take item!\n"
                             "op close box!\nop other -> box\nrelease item box\n",
                             "own.model"));
  GeneratorConfig config;
  config.model = &model;
  const Sequence parent = parseSequence(
      "open x0\nother x1\nput x0 i0\npoke i0\nclose x0\nput x1 i1\n", "p.seq", &model);
  std::size_t lives = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    std::string how;
    const Sequence child = mutate(parent, parent, config, seed, &how);
    ASSERT_TRUE(isValid(child)) << how << "\n" << printSequence(child);
    if (how != "repeat life of 1 (4 ops) x1") continue;  // that edit alone
    ++lives;
    // x0's life, open to close with its item, once more after the close; x1's ops stay apart.
    EXPECT_EQ(normalizedOperations(child),
              normalizedOperations(parseSequence("open x0\nother x1\nput x0 i0\npoke i0\n"
                                                 "close x0\nopen x2\nput x2 i1\npoke i1\n"
                                                 "close x2\nput x1 i2\n",
                                                 "c.seq", &model)))
        << printSequence(child);
  }
  EXPECT_GT(lives, 0U) << "no seed of 400 repeated x0's life alone";
}

TEST(Mutations, UsingANameAddsAnOperationOnItBetweenItsMakingAndItsEnd) {
  const LifecycleModel& model =
      internModel(parseModel("model own\nresource box prefix x\nresource item prefix i\n"
                             "op open -> box\nop put box -> item\nop poke item\nop take item!\n"
                             "op close box!\nrelease item box\n",
                             "own.model"));
  GeneratorConfig config;
  config.model = &model;
  const Sequence parent =
      parseSequence("open x0\nopen x1\nput x0 i0\nput x1 i1\nclose x0\n", "p.seq", &model);
  std::size_t uses = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    std::string how;
    const Sequence child = mutate(parent, parent, config, seed, &how);
    ASSERT_TRUE(isValid(child)) << how << "\n" << printSequence(child);
    if (!how.starts_with("use x0 in ") || how.find(';') != std::string::npos) continue;
    ++uses;
    // One operation more, on x0, after open x0 and before close x0.
    ASSERT_EQ(child.ops.size(), parent.ops.size() + 1) << how << "\n" << printSequence(child);
    std::size_t added = 0;
    while (added < parent.ops.size() && child.ops[added] == parent.ops[added])
      ++added;
    const Operation& op = child.ops[added];
    EXPECT_NE(std::find(op.names.begin(), op.names.end(), "x0"), op.names.end())
        << how << "\n"
        << printSequence(child);
    EXPECT_GE(added, 1U) << how;
    EXPECT_LE(added, 4U) << how;  // before close x0
  }
  EXPECT_GT(uses, 0U) << "no seed of 400 used x0 alone";
}

TEST(Mutations, RepairDropsWhatLostItsPreconditionAndWhatDependsOnIt) {
  const Sequence seq =
      parseSequence("create r0\ndraw r0\ndestroy r0\ncreate r1\nsync r1\n", "t.seq");
  Sequence broken = seq;
  broken.ops.erase(broken.ops.begin());  // r0 never made: its draw and destroy go too
  EXPECT_FALSE(isValid(broken));
  const Sequence fixed = repaired(broken, 40);
  EXPECT_TRUE(isValid(fixed));
  EXPECT_EQ(normalizedOperations(fixed),
            normalizedOperations(parseSequence("create r1\nsync r1\n", "u.seq")));
  EXPECT_EQ(repaired(seq, 2).ops.size(), 2U);
}

TEST(EdgeValues, InsideTheBoundsSortedWithPowersOfTwoAndTheWordSizes) {
  const std::vector<uint64_t> v = edgeValues(1, uint64_t{1} << 33, 256);
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  EXPECT_EQ(std::set<uint64_t>(v.begin(), v.end()).size(), v.size());
  EXPECT_EQ(v.front(), 1U);
  EXPECT_EQ(v.back(), uint64_t{1} << 33);
  for (const uint64_t want :
       {uint64_t{2}, uint64_t{255}, uint64_t{256}, uint64_t{257}, (uint64_t{1} << 31) - 1,
        uint64_t{1} << 31, (uint64_t{1} << 32) + 1}) {
    EXPECT_NE(std::find(v.begin(), v.end(), want), v.end()) << want;
  }
  const std::vector<uint64_t> small = edgeValues(3, 10, 4);
  for (const uint64_t x : small) {
    EXPECT_GE(x, 3U);
    EXPECT_LE(x, 10U);
  }
  EXPECT_EQ(edgeValues(7, 7, 7), std::vector<uint64_t>{7});
}

}  // namespace
}  // namespace gpufuzz
