// GeneratorTest.cpp: generated sequences are reproducible, valid, and have the shapes bugs need;
// shrink candidates stay valid.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "model/Generator.h"
#include "model/Sequence.h"
#include "model/SequenceEdits.h"
#include "model/renderer/ReferenceModel.h"

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

/// `seq` after every swap toward the canonical order, taken while one is offered: what a shrink
/// ends with when the order never matters to the failure.
std::string sortedBySwaps(Sequence seq) {
  for (bool swapped = true; swapped;) {
    swapped = false;
    for (auto& [edit, candidate] : shrinkCandidates(seq)) {
      if (edit.kind != Edit::Kind::Swap) continue;
      seq = std::move(candidate);
      swapped = true;
      break;
    }
  }
  return normalizedOperations(seq);
}

// Two minimal sequences that differ only in the place of an order-free step on the same first
// name are one text: keyed by the first name alone, neither order was ever tried against the
// other, and a target's one hang gave two findings.
TEST(ShrinkCandidates, AnOrderFreeStepOnTheSameNameTakesOnePlace) {
  const LifecycleModel& opencl = builtinModel("opencl");
  const std::string head =
      "create_context c0\ncreate_command_queue c0 q0\ncreate_buffer c0 b0\ncreate_buffer c0 b1\n";
  const Sequence fillFirst = parseSequence(
      head + "enqueue_fill_buffer q0 b1\nenqueue_write_buffer q0 b0\nenqueue_read_buffer q0 b1\n",
      "a.seq", &opencl);
  const Sequence writeFirst = parseSequence(
      head + "enqueue_write_buffer q0 b0\nenqueue_fill_buffer q0 b1\nenqueue_read_buffer q0 b1\n",
      "b.seq", &opencl);
  EXPECT_EQ(sortedBySwaps(fillFirst), sortedBySwaps(writeFirst));
  EXPECT_EQ(sortedBySwaps(fillFirst), normalizedOperations(writeFirst))
      << "the step on the earlier-introduced buffer goes first";
}

// --inject marks operations of the model's declared words, on about its rate of sequences; the
// operations stay those the same seed gives without it, so a campaign keeps its stream.
TEST(Generator, InjectMarksDeclaredWordsAndKeepsTheOperations) {
  const LifecycleModel& model = builtinModel("all");
  GeneratorConfig plain{&model, 25};
  GeneratorConfig injected = plain;
  injected.inject.add(FailWord::Oom);
  injected.inject.add(FailWord::Lost);
  injected.injectRate = 40;
  std::size_t marked = 0;
  const uint64_t seeds = 500;
  for (uint64_t seed = 0; seed < seeds; ++seed) {
    const Sequence a = generateSequence(plain, seed);
    Sequence b = generateSequence(injected, seed);
    EXPECT_TRUE(isValid(b)) << printSequence(b);
    bool any = false;
    for (Operation& op : b.ops) {
      if (!op.mark) continue;
      any = true;
      EXPECT_TRUE(op.form->fails.has(op.mark->word)) << operationText(op);
      EXPECT_NE(op.mark->word, FailWord::HostOom) << "only the injected words";
      EXPECT_LE(op.mark->nth, 4U);
      op.mark.reset();
    }
    marked += any ? 1 : 0;
    EXPECT_EQ(a.ops, b.ops) << seed;
    for (const Operation& op : a.ops)
      EXPECT_FALSE(op.mark.has_value()) << "no marks without --inject";
  }
  // 40% of the sequences are drawn to carry marks; a few have no operation that declares one.
  EXPECT_GT(marked, seeds * 30 / 100);
  EXPECT_LT(marked, seeds * 45 / 100);
}

TEST(Generator, SameSeedSameSequenceAndAlwaysValid) {
  for (std::string_view name : {"renderer", "device", "all"}) {
    SCOPED_TRACE(name);
    const LifecycleModel& model = builtinModel(name);
    const GeneratorConfig config{&model, 25};
    std::set<std::string> distinct, seen;
    for (uint64_t seed = 0; seed < 300; ++seed) {
      const Sequence s = generateSequence(config, seed);
      EXPECT_EQ(s.ops, generateSequence(config, seed).ops);
      EXPECT_EQ(&s.lifecycle(), &model);
      EXPECT_TRUE(isValid(s)) << printSequence(s);
      EXPECT_GE(s.ops.size(), 1U);
      EXPECT_LE(s.ops.size(), 25U);
      for (const Operation& op : s.ops) {
        EXPECT_EQ(op.form->model, &model) << operationText(op);
        const bool rendererLevel = rendererOp(op) <= RendererOp::Destroy;
        if (name == "renderer") {
          EXPECT_TRUE(rendererLevel) << operationText(op);
        } else if (name == "device") {
          EXPECT_FALSE(rendererLevel) << operationText(op);
        }
        seen.insert(std::string(op.name()));
      }
      distinct.insert(printSequence(s));
    }
    EXPECT_GT(distinct.size(), 250U);
    EXPECT_EQ(seen.size(), model.ops.size()) << "every operation of the model occurs";
  }
}

TEST(Generator, TheDefaultModelIsTheRenderer) {
  EXPECT_EQ(&GeneratorConfig{}.lifecycle(), &builtinModel("renderer"));
  const GeneratorConfig renderer{&builtinModel("renderer"), 40};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    EXPECT_EQ(generateSequence(GeneratorConfig{}, seed).ops, generateSequence(renderer, seed).ops);
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
      if (op.name() == "create") {
        ++creates;
        sawCreateAfterDrop = sawCreateAfterDrop || dropped;
      }
      if (op.name() == "draw") {
        queued[r] = true;
        drewBefore = true;
      }
      if (op.name() == "sync" || op.name() == "read_back") queued[r] = false;
      if (op.name() == "set_textures" && drewBefore) sawReplace = true;
      if (op.name() == "destroy") {
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
