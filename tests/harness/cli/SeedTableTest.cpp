// SeedTableTest.cpp: the seed's "How it was found" table, reproduced on sim in child processes:
// under max-26.5.0 (context-first for the renderer rows, bare device operations for the bare
// rows) exactly its Works/Hangs column; under max-26.6.0 all six work; under max-26.5.0 with the
// shipped policy no renderer row hangs.
#include <gtest/gtest.h>

#include "model/Sequence.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

struct Row {
  const char* file;
  bool rendererRow;
  bool hangsOn2650;  // the seed's column
};
constexpr Row kTable[] = {
    {"renderer-b-while-a-alive.seq", true, false},
    {"drawn-synced-destroyed-then-b.seq", true, true},
    {"never-drawn-destroyed-then-b.seq", true, true},
    {"two-bare-contexts.seq", false, false},
    {"buffers-first-twice.seq", false, false},
    {"context-first-twice.seq", false, true},
};

Sequence row(const Row& r) {
  return loadSequence((testing::sourceDir() / "corpus/seed-table" / r.file).string());
}

RunOutcome runRow(const Row& r, TeardownPolicy policy, const std::string& faults) {
  testing::SimTrials trials(policy, faults);
  const TrialResult t = trials.runner.run(row(r), TrialMode::Confirmed);
  EXPECT_FALSE(t.harnessError) << *t.harnessError;
  return t.outcome;
}

TEST(SeedTable, Max2650GivesTheSeedsColumn) {
  for (const Row& r : kTable) {
    const RunOutcome o = runRow(r, TeardownPolicy::ContextFirst, "max-26.5.0");
    EXPECT_EQ(o.cls, r.hangsOn2650 ? OutcomeClass::Hang : OutcomeClass::Pass)
        << r.file << ": " << outcomeText(o);
    // Each file's own expectation says the same.
    EXPECT_TRUE(o.meets(row(r).expectationFor("sim"))) << r.file << ": " << outcomeText(o);
  }
}

TEST(SeedTable, HangsAreInTheNextContextsFirstAllocation) {
  const RunOutcome o = runRow(kTable[5], TeardownPolicy::ContextFirst, "max-26.5.0");
  ASSERT_EQ(o.cls, OutcomeClass::Hang);
  EXPECT_EQ(o.op, "buf_create");
  ASSERT_TRUE(o.at.has_value());
  EXPECT_EQ(o.at->ordinal, 5U);
}

TEST(SeedTable, Max2660Works) {
  for (const Row& r : kTable) {
    const RunOutcome o = runRow(r, TeardownPolicy::ContextFirst, "max-26.6.0");
    EXPECT_EQ(o.cls, OutcomeClass::Pass) << r.file << ": " << outcomeText(o);
  }
}

TEST(SeedTable, ShippedRendererNeverHangsUnderMax2650) {
  for (const Row& r : kTable) {
    if (!r.rendererRow) continue;
    const RunOutcome o = runRow(r, TeardownPolicy::Shipped, "max-26.5.0");
    EXPECT_EQ(o.cls, OutcomeClass::Pass) << r.file << ": " << outcomeText(o);
  }
}

}  // namespace
}  // namespace gpufuzz
