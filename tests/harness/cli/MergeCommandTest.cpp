// MergeCommandTest.cpp: gpufuzz merge: the union of findings folders by signature, hits summed, the
// earliest find's folder kept, stats summed; merging again changes nothing, a source that went on
// fuzzing adds only what is new, and the merged folder's own counts stay its own. Bad sources are
// refused with exit status 2.
#include <gtest/gtest.h>

#include "harness/base/AtomicFile.h"
#include "harness/campaign/StatsFile.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

Finding hangAt3(const std::string& policy, uint64_t seed, uint64_t hits,
                const std::string& foundAt) {
  Finding f = testing::simFinding("create a\ndestroy a\ncreate b\n", OutcomeClass::Hang, 3,
                                  "create", policy, "max-26.5.0");
  f.seed = seed;
  f.hits = hits;
  f.foundAt = foundAt;
  return f;
}

Finding errorAt2(uint64_t hits, const std::string& foundAt) {
  Finding f = testing::simFinding("create a\ndestroy a\n", OutcomeClass::Error, 2, "destroy",
                                  "no-destroy-sync", "strict-lifetimes");
  f.hits = hits;
  f.foundAt = foundAt;
  return f;
}

Finding errorAt3(uint64_t hits, const std::string& foundAt) {
  Finding f = testing::simFinding("create a\nset_textures a\nset_textures a\n", OutcomeClass::Error,
                                  3, "set_textures", "no-texture-wait", "strict-lifetimes");
  f.hits = hits;
  f.foundAt = foundAt;
  return f;
}

CampaignStats statsOf(uint64_t executions, uint64_t sequences, uint64_t hangs) {
  CampaignStats s;
  s.seed = 7;
  s.backend = "sim";
  s.run.campaigns = 1;
  s.run.executions = executions;
  s.run.sequences = sequences;
  s.run.byClass[static_cast<std::size_t>(OutcomeClass::Hang)] = hangs;
  s.run.byClass[static_cast<std::size_t>(OutcomeClass::Pass)] = sequences - hangs;
  s.cumulative = s.run;
  s.finished = true;
  return s;
}

std::map<std::string, StoredFinding> findingsIn(const std::filesystem::path& root) {
  std::map<std::string, StoredFinding> out;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (const auto f = readStoredFinding(entry.path())) out[f->signature] = *f;
  }
  return out;
}

struct TwoSources {
  testing::ScratchDir dir;
  std::filesystem::path a = dir.path() / "a", b = dir.path() / "b", out = dir.path() / "merged";
  Finding shared = hangAt3("context-first", 11, 2, "2026-01-01T10:00:00Z");
  TwoSources() {
    FindingStore storeA(a);
    storeA.record(shared);
    storeA.record(errorAt2(3, "2026-01-01T11:00:00Z"));
    writeStats(a / kStatsFile, statsOf(100, 40, 5));
    FindingStore storeB(b);
    // The same bug under other names, found earlier by another seed.
    Finding earlier = hangAt3("context-first", 22, 4, "2026-01-01T09:00:00Z");
    earlier.minimal = parseSequence("create x\ndestroy x\ncreate y\n", "m.seq");
    earlier.minimal.directives = shared.minimal.directives;
    storeB.record(earlier);
    storeB.record(errorAt3(1, "2026-01-01T12:00:00Z"));
    writeStats(b / kStatsFile, statsOf(50, 20, 1));
  }
  testing::CommandResult merge() const {
    return testing::gpufuzz("merge " + a.string() + " " + b.string() + " --out " + out.string());
  }
};

TEST(Merge, UnionBySignatureWithHitsSummedAndTheEarliestFindKept) {
  TwoSources s;
  const auto r = s.merge();
  ASSERT_EQ(r.status, 0) << r.output;
  const auto merged = findingsIn(s.out);
  ASSERT_EQ(merged.size(), 3U) << r.output;
  const StoredFinding& shared = merged.at(s.shared.signature());
  EXPECT_EQ(shared.hits, 6U);
  EXPECT_EQ(shared.seed, 22U) << "the earliest find's record";
  EXPECT_EQ(shared.foundAt, "2026-01-01T09:00:00Z");
  EXPECT_NE(readFile(shared.dir / "minimal.seq").find("create x"), std::string::npos);
  EXPECT_EQ(merged.at(errorAt2(1, "").signature()).hits, 3U);
  EXPECT_EQ(merged.at(errorAt3(1, "").signature()).hits, 1U);
  for (const auto& [signature, f] : merged)
    EXPECT_TRUE(std::filesystem::exists(f.dir / "minimal.seq"));

  const auto stats = readStats(s.out / kStatsFile);
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->cumulative.executions, 150U);
  EXPECT_EQ(stats->cumulative.sequences, 60U);
  EXPECT_EQ(stats->cumulative.campaigns, 2U);
  EXPECT_EQ(stats->cumulative.byClass[static_cast<std::size_t>(OutcomeClass::Hang)], 6U);
  EXPECT_EQ(stats->uniqueFindings, 3U);
  EXPECT_EQ(stats->seed, 7U);
  EXPECT_EQ(stats->mergedFrom.size(), 2U);
}

TEST(Merge, MergingAgainCountsNothingTwice) {
  TwoSources s;
  ASSERT_EQ(s.merge().status, 0);
  const auto once = findingsIn(s.out);
  const std::string statsOnce = readFile(s.out / kStatsFile);
  const auto again = s.merge();
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_NE(again.output.find("0 new finding(s), 0 with hits added, 4 unchanged"),
            std::string::npos)
      << again.output;
  const auto twice = findingsIn(s.out);
  for (const auto& [signature, f] : once)
    EXPECT_EQ(twice.at(signature).hits, f.hits) << f.id;
  const auto stats = readStats(s.out / kStatsFile);
  EXPECT_EQ(stats->cumulative.executions, 150U) << statsOnce;
  EXPECT_EQ(stats->cumulative.campaigns, 2U);
}

TEST(Merge, ASourceThatWentOnAddsOnlyWhatIsNewAndOwnHitsStay) {
  TwoSources s;
  ASSERT_EQ(s.merge().status, 0);
  // Source a finds the shared bug once more and runs longer.
  FindingStore(s.a).record(hangAt3("context-first", 11, 1, ""));
  writeStats(s.a / kStatsFile, statsOf(300, 90, 6));
  // A campaign in the merged folder itself hits it twice.
  FindingStore(s.out).record(hangAt3("context-first", 33, 2, ""));
  ASSERT_EQ(findingsIn(s.out).at(s.shared.signature()).hits, 8U);
  const auto r = s.merge();
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(findingsIn(s.out).at(s.shared.signature()).hits, 9U) << "6 merged + 1 new + 2 own";
  const auto stats = readStats(s.out / kStatsFile);
  EXPECT_EQ(stats->cumulative.executions, 350U);
  ASSERT_EQ(s.merge().status, 0);
  EXPECT_EQ(findingsIn(s.out).at(s.shared.signature()).hits, 9U);
}

TEST(Merge, RefusesWhatIsNotAFindingsFolder) {
  TwoSources s;
  ASSERT_EQ(s.merge().status, 0);
  const std::string before = readFile(s.out / kStatsFile);
  const std::string into = " --out " + s.out.string();
  const auto missing = testing::gpufuzz("merge " + (s.dir.path() / "missing").string() + into);
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.output.find("missing: not a folder"), std::string::npos) << missing.output;
  std::filesystem::create_directories(s.dir.path() / "empty");
  const auto empty = testing::gpufuzz("merge " + (s.dir.path() / "empty").string() + into);
  EXPECT_EQ(empty.status, 2);
  EXPECT_NE(empty.output.find("empty: not a findings folder"), std::string::npos) << empty.output;
  const auto itself = testing::gpufuzz("merge " + s.a.string() + " " + s.out.string() + into);
  EXPECT_EQ(itself.status, 2);
  EXPECT_NE(itself.output.find("is the folder merged into"), std::string::npos) << itself.output;
  EXPECT_EQ(testing::gpufuzz("merge" + into).status, 2);
  writeFileAtomically(s.a / kStatsFile, "{\"executions\": \"many\"}");
  const auto badStats = testing::gpufuzz("merge " + s.a.string() + into);
  EXPECT_EQ(badStats.status, 2);
  EXPECT_NE(badStats.output.find("stats.json: `executions` is not a number"), std::string::npos)
      << badStats.output;
  EXPECT_EQ(readFile(s.out / kStatsFile), before);
}

TEST(Merge, ShardsOfACampaignMergeIntoOne) {
  testing::ScratchDir dir;
  std::string shards;
  uint64_t executions = 0;
  for (int i = 0; i < 2; ++i) {
    const auto out = dir.path() / ("shard" + std::to_string(i));
    const auto r = testing::gpufuzz(testing::kQuickSimFuzz +
                                    " --policy no-texture-wait --faults strict-lifetimes --seed 5"
                                    " --runs 24 --shard " +
                                    std::to_string(i) + "/2 --out " + out.string());
    ASSERT_NE(r.status, 2) << r.output;
    executions += readStats(out / kStatsFile)->cumulative.executions;
    shards += " " + out.string();
  }
  const auto out = dir.path() / "findings";
  const auto r = testing::gpufuzz("merge" + shards + " --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto stats = readStats(out / kStatsFile);
  EXPECT_EQ(stats->run.sequences, 24U);
  EXPECT_EQ(stats->cumulative.executions, executions);
  uint64_t hits = 0;
  for (const auto& [signature, f] : findingsIn(out))
    hits += f.hits;
  uint64_t shardHits = 0;
  for (const char* shard : {"shard0", "shard1"}) {
    for (const auto& [signature, f] : findingsIn(dir.path() / shard))
      shardHits += f.hits;
  }
  EXPECT_EQ(hits, shardHits);
  EXPECT_GE(findingsIn(out).size(), 1U);
}

}  // namespace
}  // namespace gpufuzz
