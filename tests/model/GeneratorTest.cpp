// GeneratorTest.cpp: generated sequences are reproducible, valid, and have the shapes bugs need;
// shrink candidates stay valid.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "model/Generator.h"
#include "model/Sequence.h"
#include "model/SequenceEdits.h"

namespace gpufuzz {
namespace {

TEST(ShrinkCandidates, RemovalTakesDependentsAndEveryCandidateIsValid) {
  const Sequence seq = parseSequence(
      "create r0\ndraw r0 triangles=9\ncreate r1\ndestroy r0\nread_back r1\n", "t.seq");
  const Sequence without = removeOperation(seq, 0);
  EXPECT_EQ(normalizedOperations(without), "create r0\nread_back r0\n");
  for (const auto& [edit, candidate] : shrinkCandidates(seq)) {
    EXPECT_TRUE(isValid(candidate)) << edit.describe(seq);
    EXPECT_NE(normalizedOperations(candidate), normalizedOperations(seq)) << edit.describe(seq);
  }
}

TEST(Generator, SameSeedSameSequenceAndAlwaysValid) {
  for (Vocabulary v : {Vocabulary::Renderer, Vocabulary::Device, Vocabulary::All}) {
    const GeneratorConfig config{v, 25};
    std::set<std::string> distinct;
    for (uint64_t seed = 0; seed < 300; ++seed) {
      const Sequence s = generateSequence(config, seed);
      EXPECT_EQ(s.ops, generateSequence(config, seed).ops);
      EXPECT_TRUE(isValid(s)) << printSequence(s);
      EXPECT_GE(s.ops.size(), 1U);
      EXPECT_LE(s.ops.size(), 25U);
      for (const Operation& op : s.ops) {
        if (v == Vocabulary::Renderer) {
          EXPECT_TRUE(isRendererOp(op.kind));
        } else if (v == Vocabulary::Device) {
          EXPECT_FALSE(isRendererOp(op.kind));
        }
      }
      distinct.insert(printSequence(s));
    }
    EXPECT_GT(distinct.size(), 250U);
  }
}

TEST(Generator, ProducesTheLifecycleShapesBugsNeed) {
  // Over a few hundred sequences: renderers dropped with queued work, new renderers after a drop,
  // texture replacement between draws, and three or more contexts.
  int droppedWithWork = 0, createAfterDrop = 0, replacedBetweenDraws = 0, threeContexts = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    const Sequence s = generateSequence(GeneratorConfig{}, seed);
    std::map<std::string, bool> queued;
    bool dropped = false, drewBefore = false, sawCreateAfterDrop = false, sawReplace = false;
    int creates = 0;
    for (const Operation& op : s.ops) {
      const std::string& r = op.names[0];
      if (op.kind == OpKind::Create) {
        ++creates;
        sawCreateAfterDrop = sawCreateAfterDrop || dropped;
      }
      if (op.kind == OpKind::Draw) {
        queued[r] = true;
        drewBefore = true;
      }
      if (op.kind == OpKind::Sync || op.kind == OpKind::ReadBack) queued[r] = false;
      if (op.kind == OpKind::SetTextures && drewBefore) sawReplace = true;
      if (op.kind == OpKind::Destroy) {
        droppedWithWork += queued[r] ? 1 : 0;
        dropped = true;
      }
    }
    createAfterDrop += sawCreateAfterDrop ? 1 : 0;
    replacedBetweenDraws += sawReplace ? 1 : 0;
    threeContexts += creates >= 3 ? 1 : 0;
  }
  EXPECT_GT(droppedWithWork, 100);
  EXPECT_GT(createAfterDrop, 100);
  EXPECT_GT(replacedBetweenDraws, 100);
  EXPECT_GT(threeContexts, 100);
}

}  // namespace
}  // namespace gpufuzz
