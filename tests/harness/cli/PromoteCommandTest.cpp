// PromoteCommandTest.cpp: gpufuzz promote: a finding becomes a corpus file that replays and meets
// its expectation, with a header saying where it came from; bad input and existing targets are
// refused with exit status 2 and nothing written; a finding that no longer fails is not promoted.
#include <gtest/gtest.h>

#include "harness/base/AtomicFile.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

bool contains(const std::vector<std::string>& notes, const std::string& text) {
  for (const std::string& n : notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

/// The seed's hang, recorded as a campaign would have found it.
std::filesystem::path recordSeedHang(const std::filesystem::path& findings) {
  Finding f = testing::simFinding("create a\ndestroy a\ncreate b\n", OutcomeClass::Hang, 3,
                                  "create", "context-first", "max-26.5.0");
  f.minimal.directives.seed = 42;
  f.seed = 42;
  f.reproduced = 4;
  f.confirmations = 5;
  f.hits = 3;
  f.foundAt = "2026-01-02T03:04:05Z";
  FindingStore store(findings);
  return store.record(f).second;
}

TEST(Promote, APromotedHangReplaysAndMeetsItsExpectation) {
  testing::ScratchDir dir;
  const auto finding = recordSeedHang(dir.path() / "findings");
  const auto corpus = dir.path() / "corpus" / "promoted";
  const auto r = testing::gpufuzz("promote " + finding.string() + " --deadline 150 --corpus " +
                                  corpus.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto file = corpus / (finding.filename().string() + ".seq");
  ASSERT_TRUE(std::filesystem::exists(file)) << r.output;
  const Sequence promoted = loadSequence(file.string());
  const Directives& d = promoted.directives;
  EXPECT_EQ(normalizedOperations(promoted), "create r0\ndestroy r0\ncreate r1\n");
  EXPECT_EQ(d.expect, (Expectation{OutcomeClass::Hang, At{3}}));
  EXPECT_FALSE(d.backend.has_value()) << "the corpus runs on every backend";
  EXPECT_EQ(d.policy, "context-first");
  EXPECT_EQ(d.faults, "max-26.5.0");
  EXPECT_EQ(d.seed, 42U);
  // Where it came from: the finding's id, when it was found, its seed and reproduction rate.
  EXPECT_TRUE(contains(d.notes, finding.filename().string())) << printSequence(promoted);
  EXPECT_TRUE(contains(d.notes, "found 2026-01-02T03:04:05Z on sim")) << printSequence(promoted);
  EXPECT_TRUE(contains(d.notes, "sequence seed 42")) << printSequence(promoted);
  EXPECT_TRUE(contains(d.notes, "reproduced 4/5")) << printSequence(promoted);
  const auto replay =
      testing::gpufuzz("replay --backend sim --no-stacks --deadline 150 " + file.string());
  EXPECT_EQ(replay.status, 0) << replay.output;
  EXPECT_NE(replay.output.find("ok"), std::string::npos) << replay.output;
}

TEST(Promote, AFindingOfACampaignByItsMinimalSeqUnderAName) {
  testing::ScratchDir dir;
  const auto findings = dir.path() / "findings";
  const auto c = testing::gpufuzz(testing::kQuickSimFuzz +
                                  " --policy no-texture-wait --faults strict-lifetimes --seed 5"
                                  " --runs 24 --out " +
                                  findings.string());
  ASSERT_EQ(c.status, 1) << c.output;
  std::filesystem::path finding;
  for (const auto& entry : std::filesystem::directory_iterator(findings)) {
    if (entry.is_directory() && entry.path().filename() != "queue") finding = entry.path();
  }
  ASSERT_FALSE(finding.empty());
  const auto corpus = dir.path() / "corpus";
  const auto r = testing::gpufuzz("promote " + (finding / "minimal.seq").string() +
                                  " --name textures-replaced --corpus " + corpus.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto file = corpus / "textures-replaced.seq";
  const Sequence promoted = loadSequence(file.string());
  EXPECT_EQ(promoted.directives.expect,
            loadSequence((finding / "minimal.seq").string()).directives.expect);
  EXPECT_TRUE(contains(promoted.directives.notes, "found 20")) << printSequence(promoted);
  EXPECT_EQ(testing::gpufuzz("replay --backend sim " + file.string()).status, 0);
}

// A folder given with a trailing slash, or its minimal.seq from inside it, is still named by its
// id: the corpus file's name and the note say where it came from.
TEST(Promote, AFolderWithATrailingSlashIsNamedByItsId) {
  testing::ScratchDir dir;
  const auto finding = recordSeedHang(dir.path() / "findings");
  const std::string id = finding.filename().string();
  const auto corpus = dir.path() / "corpus";
  const auto r = testing::gpufuzz("promote " + finding.string() + "/ --deadline 150 --corpus " +
                                  corpus.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("promoted " + id + " to "), std::string::npos) << r.output;
  const auto file = corpus / (id + ".seq");
  ASSERT_TRUE(std::filesystem::exists(file)) << r.output;
  EXPECT_TRUE(contains(loadSequence(file.string()).directives.notes, "from finding " + id + " ("));
}

TEST(Promote, RefusesExistingTargetsAndWhatIsNotAFinding) {
  testing::ScratchDir dir;
  const auto finding = recordSeedHang(dir.path() / "findings");
  const auto corpus = dir.path() / "corpus";
  const std::string into = " --deadline 150 --corpus " + corpus.string();
  const auto target = corpus / "kept.seq";
  writeFileAtomically(target, "# gpufuzz sequence\ncreate r0\n");

  const auto exists = testing::gpufuzz("promote " + finding.string() + " --name kept" + into);
  EXPECT_EQ(exists.status, 2) << exists.output;
  EXPECT_NE(exists.output.find("kept.seq: exists already"), std::string::npos) << exists.output;
  EXPECT_EQ(readFile(target), "# gpufuzz sequence\ncreate r0\n");

  const auto plain = dir.write("plain.seq", "create r0\n");
  const auto notAFinding = testing::gpufuzz("promote " + plain.string() + into);
  EXPECT_EQ(notAFinding.status, 2);
  EXPECT_NE(notAFinding.output.find("plain.seq: not a finding"), std::string::npos)
      << notAFinding.output;
  EXPECT_EQ(testing::gpufuzz("promote " + (finding / "original.seq").string() + into).status, 2);
  EXPECT_EQ(testing::gpufuzz("promote " + (dir.path() / "findings").string() + into).status, 2);
  EXPECT_EQ(testing::gpufuzz("promote " + (dir.path() / "missing").string() + into).status, 2);
  EXPECT_EQ(testing::gpufuzz("promote " + finding.string() + " --name ../out" + into).status, 2);
  EXPECT_EQ(testing::gpufuzz("promote" + into).status, 2);
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(corpus))
    ++files;
  EXPECT_EQ(files, 1U) << "a refused promotion writes nothing";

  const auto forced =
      testing::gpufuzz("promote " + finding.string() + " --name kept --force" + into);
  EXPECT_EQ(forced.status, 0) << forced.output;
  EXPECT_EQ(loadSequence(target.string()).directives.expect,
            (Expectation{OutcomeClass::Hang, At{3}}));
}

TEST(Promote, AFindingThatNoLongerFailsIsNotPromoted) {
  testing::ScratchDir dir;
  // Recorded as a hang, but the shipped policy does not hang there.
  const Finding f = testing::simFinding("create a\ndestroy a\ncreate b\n", OutcomeClass::Hang, 3,
                                        "create", "shipped", "max-26.5.0");
  const auto finding = FindingStore(dir.path() / "findings").record(f).second;
  const auto corpus = dir.path() / "corpus";
  const auto r = testing::gpufuzz("promote " + finding.string() + " --deadline 150 --corpus " +
                                  corpus.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("did not reproduce"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(corpus / (finding.filename().string() + ".seq")));
}

}  // namespace
}  // namespace gpufuzz
