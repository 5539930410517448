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

TEST(ShrinkCandidates, FoldANameIntoAnEarlierOneAndSortTowardOneOrder) {
  const Sequence seq = parseSequence("create a\ncreate b\ndraw b\ndraw a\ndestroy b\n", "t.seq");
  std::vector<std::string> merged, swapped;
  for (const auto& [edit, candidate] : shrinkCandidates(seq)) {
    if (edit.kind == Edit::Kind::Merge) merged.push_back(normalizedOperations(candidate));
    if (edit.kind == Edit::Kind::Swap) swapped.push_back(edit.describe(seq));
  }
  // b folded into a: its create and destroy go, its draw is a's.
  EXPECT_EQ(merged, std::vector<std::string>{"create r0\ndraw r0\ndraw r0\n"});
  // Operations on a (introduced first) move before those on b; nothing else moves.
  EXPECT_EQ(swapped, (std::vector<std::string>{"swap 3 (draw b) and 4 (draw a)"}));
  // Merging into a name released before a use is invalid.
  const Sequence released = parseSequence("create a\ndestroy a\ncreate b\ndraw b\n", "r.seq");
  EXPECT_FALSE(mergeName(released, 2, "b", "a").has_value());
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
