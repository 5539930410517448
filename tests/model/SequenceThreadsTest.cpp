// SequenceThreadsTest.cpp: `@T` lines and `# threads:` (docs/sequences.md, Threads): reading them
// with every error placed, printing them back, renumbering threads, what each operation waits for,
// the shrinker's thread edits, and the generator's spread over threads.
#include <gtest/gtest.h>

#include <set>

#include "base/InputError.h"
#include "model/Generator.h"
#include "model/Sequence.h"
#include "model/SequenceEdits.h"
#include "tests/model/TestSequence.h"

namespace gpufuzz {
namespace {

constexpr const char* kRace =
    "# model: device\n"
    "ctx_create c0\n"
    "buf_create c0 b0\n"
    "@1 buf_destroy b0\n"
    "ctx_create c1\n";

using testing::parseTestSequence;

/// The message of the InputError that parsing `text` throws, or "" when it parses.
std::string errorOf(std::string_view text) {
  try {
    parseTestSequence(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SequenceThreads, PrefixesPutOperationsOnThreads) {
  const Sequence s = parseTestSequence(kRace);
  ASSERT_EQ(s.ops.size(), 4u);
  EXPECT_EQ(s.ops[0].thread, 0u);
  EXPECT_EQ(s.ops[2].thread, 1u);
  EXPECT_EQ(s.ops[3].thread, 0u);
  EXPECT_EQ(s.threadCount(), 2u);
  EXPECT_EQ(parseTestSequence("# model: device\n@0 ctx_create c0\n").threadCount(), 1u);
}

TEST(SequenceThreads, PrintingWritesThePrefixesAndTheThreadCount) {
  const std::string text = printSequence(parseTestSequence(kRace));
  EXPECT_NE(text.find("# threads: 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n@1 buf_destroy b0\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("@0"), std::string::npos) << text;
  const Sequence again = parseTestSequence(text);
  EXPECT_EQ(again.ops, parseTestSequence(kRace).ops);
  EXPECT_EQ(printSequence(again), text);
  EXPECT_EQ(printSequence(onOneThread(again)).find("threads"), std::string::npos);
}

TEST(SequenceThreads, BadPrefixesAreRefusedWithTheirPlace) {
  EXPECT_NE(errorOf("# model: device\n@8 ctx_create c0\n").find("t.seq:2:1:"), std::string::npos);
  EXPECT_NE(errorOf("# model: device\n@8 ctx_create c0\n").find("@0..@7"), std::string::npos);
  EXPECT_NE(errorOf("# model: device\n@x ctx_create c0\n").find("t.seq:2:1:"), std::string::npos);
  EXPECT_NE(errorOf("# model: device\n  @ ctx_create c0\n").find("t.seq:2:3:"), std::string::npos);
  EXPECT_NE(errorOf("# model: device\n@-1 ctx_create c0\n").find("t.seq:2:1:"), std::string::npos);
  // A prefix on a directive (or on nothing) prefixes no operation.
  const std::string onDirective = errorOf("@1 # model: device\nctx_create c0\n");
  EXPECT_NE(onDirective.find("t.seq:1:1:"), std::string::npos) << onDirective;
  EXPECT_NE(onDirective.find("prefixes no operation"), std::string::npos) << onDirective;
  // A prefix is not a name.
  EXPECT_NE(errorOf("# model: device\nctx_create @1\n"), "");
}

/// kRace under a `# threads: N` directive. Appended, not `std::string(...) + kRace`: GCC 12's
/// -Warray-bounds reports that sum falsely once inlined.
std::string raceWithThreads(const char* n) {
  std::string text = "# threads: ";
  text.append(n).append("\n").append(kRace);
  return text;
}

TEST(SequenceThreads, AThreadsDirectiveMustAgreeWithThePrefixes) {
  EXPECT_EQ(errorOf(raceWithThreads("2")), "");
  const std::string three = errorOf(raceWithThreads("3"));
  EXPECT_NE(three.find("t.seq:1:12:"), std::string::npos) << three;
  EXPECT_NE(three.find("1 + the largest T"), std::string::npos) << three;
  EXPECT_NE(errorOf("# threads: 2\n# model: device\nctx_create c0\n").find("t.seq:1:12:"),
            std::string::npos);
  EXPECT_NE(errorOf("# threads: 0\n").find("t.seq:1:12:"), std::string::npos);
  EXPECT_NE(errorOf("# threads: 9\n").find("1..8"), std::string::npos);
  EXPECT_NE(errorOf("# threads: two\n").find("t.seq:1:12:"), std::string::npos);
}

TEST(SequenceThreads, RenumberingNumbersThreadsInOrderOfAppearance) {
  const Sequence s =
      parseTestSequence("# model: device\n@3 ctx_create c0\n@5 ctx_create c1\nctx_create c2\n");
  const Sequence r = renumbered(s);
  EXPECT_EQ(r.ops[0].thread, 0u);
  EXPECT_EQ(r.ops[1].thread, 1u);
  EXPECT_EQ(r.ops[2].thread, 2u);
  EXPECT_EQ(normalizedOperations(s), "ctx_create c0\n@1 ctx_create c1\n@2 ctx_create c2\n");
  // Threads are part of the signature's text: a race and its one-thread form differ.
  EXPECT_NE(normalizedOperations(parseTestSequence(kRace)),
            normalizedOperations(onOneThread(parseTestSequence(kRace))));
}

TEST(SequenceThreads, EachOperationWaitsForItsThreadAndItsNames) {
  const auto waits = threadWaits(parseTestSequence(kRace));
  ASSERT_EQ(waits.size(), 4u);
  EXPECT_TRUE(waits[0].empty());
  EXPECT_EQ(waits[1], (std::vector<std::size_t>{0}));  // thread 0, and c0
  EXPECT_EQ(waits[2], (std::vector<std::size_t>{1}));  // b0 only: its thread has nothing before
  EXPECT_EQ(waits[3], (std::vector<std::size_t>{1}));  // thread 0 only: c1 is new
}

TEST(SequenceThreads, ShrinkCandidatesOfferFewerThreads) {
  const Sequence s = parseTestSequence(kRace);
  std::set<Edit::Kind> kinds;
  bool oneThread = false;
  for (const auto& [edit, candidate] : shrinkCandidates(s)) {
    kinds.insert(edit.kind);
    EXPECT_TRUE(isValid(candidate)) << edit.describe(s);
    if (edit.kind == Edit::Kind::OneThread) oneThread = candidate.threadCount() == 1;
  }
  EXPECT_TRUE(oneThread);
  EXPECT_TRUE(kinds.count(Edit::Kind::Remove));
  // On one thread already, no thread edits are offered.
  for (const auto& [edit, candidate] : shrinkCandidates(onOneThread(s))) {
    EXPECT_NE(edit.kind, Edit::Kind::OneThread);
    EXPECT_NE(edit.kind, Edit::Kind::MergeThreads);
    EXPECT_NE(edit.kind, Edit::Kind::ToThreadZero);
  }
}

TEST(SequenceThreads, GenerationSpreadsTheSameOperationsOverThreads) {
  GeneratorConfig one;
  one.model = &builtinModel("device");
  GeneratorConfig four = one;
  four.threads = 4;
  unsigned most = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const Sequence a = generateSequence(one, seed);
    const Sequence b = generateSequence(four, seed);
    EXPECT_EQ(a.threadCount(), 1u);
    EXPECT_LE(b.threadCount(), 4u);
    most = std::max(most, b.threadCount());
    // The same operations, only their threads differ; and a parse of the text agrees.
    EXPECT_EQ(normalizedOperations(onOneThread(b)), normalizedOperations(a));
    EXPECT_EQ(parseTestSequence(printSequence(b)).ops, b.ops) << printSequence(b);
    EXPECT_EQ(generateSequence(four, seed).ops, b.ops);
  }
  EXPECT_EQ(most, 4u);
}

}  // namespace
}  // namespace gpufuzz
