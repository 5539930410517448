// FindingStoreTest.cpp: findings deduplicated by signature, and known again on resume.
#include <gtest/gtest.h>

#include "harness/base/AtomicFile.h"
#include "harness/campaign/FindingStore.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

Finding findingOf(const std::string& text, OutcomeClass cls, const std::string& op) {
  Finding f;
  f.minimal = parseSequence(text, "t.seq");
  f.outcome = RunOutcome{cls, At{3}, op, "detail", {}};
  return f;
}

TEST(Findings, DeduplicatesBySignatureAndResumes) {
  testing::ScratchDir dir;
  const Finding a = findingOf("create r0\ndestroy r0\ncreate r1\n", OutcomeClass::Hang, "create");
  // Same bug under other names: the same signature.
  const Finding a2 = findingOf("create x\ndestroy x\ncreate y\n", OutcomeClass::Hang, "create");
  const Finding b = findingOf("create r0\ndestroy r0\ncreate r1\n", OutcomeClass::Error, "create");
  {
    FindingStore store(dir.path());
    EXPECT_TRUE(store.record(a).first);
    EXPECT_FALSE(store.record(a2).first);
    EXPECT_TRUE(store.record(b).first);
    EXPECT_EQ(store.size(), 2U);
  }
  FindingStore resumed(dir.path());
  EXPECT_EQ(resumed.size(), 2U);
  const auto [isNew, folder] = resumed.record(a);
  EXPECT_FALSE(isNew);
  EXPECT_NE(readFile(folder / "finding.json").find("\"hits\": 3"), std::string::npos);
  EXPECT_EQ(parseSequence(readFile(folder / "minimal.seq"), "m.seq").ops, a.minimal.ops);
}

}  // namespace
}  // namespace gpufuzz
