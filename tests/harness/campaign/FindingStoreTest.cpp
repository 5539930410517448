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

// A signature holds the model's name and hash, so equal text under two models (or two versions
// of one) never merges; `all`, what every file without `# model:` reads in, keeps the
// signatures (and folder names) it always had.
TEST(Findings, SignaturesHoldTheModelButAllKeepsItsOwn) {
  const std::string text = "create r0\ndestroy r0\ncreate r1\n";
  const Finding all = findingOf(text, OutcomeClass::Hang, "create");
  EXPECT_EQ(all.id(), "hang-create-657a04") << "the id the seed's hang had before models";
  EXPECT_EQ(all.signature(), "hang\ncreate\n" + text);

  Finding renderer = all;
  renderer.minimal.model = &builtinModel("renderer");
  const std::string of = "model renderer " + builtinModel("renderer").hash + "\n";
  EXPECT_EQ(renderer.signature(), of + all.signature());
  EXPECT_NE(renderer.id(), all.id());
  EXPECT_EQ(renderer.id(), testing::seedHangId());
  EXPECT_EQ(testing::seedHangId("all"), all.id());

  // A model of one's own with the same operation names, and a second version of it.
  const std::string mine =
      "model mine\nresource renderer prefix r\nop create -> renderer\nop destroy renderer!\n"
      "release renderer\n";
  Finding v1 = all, v2 = all;
  v1.minimal.model = &internModel(parseModel(mine, "mine.model"));
  v2.minimal.model = &internModel(parseModel(mine + "# version 2\n", "mine.model"));
  EXPECT_NE(v1.signature(), all.signature());
  EXPECT_NE(v1.signature(), renderer.signature());
  EXPECT_NE(v1.signature(), v2.signature());
  EXPECT_NE(v1.signature().find("model mine "), std::string::npos) << v1.signature();

  testing::ScratchDir dir;
  FindingStore store(dir.path());
  EXPECT_TRUE(store.record(all).first);
  EXPECT_TRUE(store.record(renderer).first) << "the same text under another model is new";
  EXPECT_TRUE(store.record(v1).first);
  EXPECT_TRUE(store.record(v2).first);
  EXPECT_FALSE(store.record(v1).first);
  EXPECT_EQ(store.size(), 4U);
}

}  // namespace
}  // namespace gpufuzz
