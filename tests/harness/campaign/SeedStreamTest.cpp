// SeedStreamTest.cpp: shards of a seed stream: the per-index seed function keeps the unsharded
// stream, shards are disjoint and together give the unsharded stream, a shard is reproducible,
// and campaigns run with --shard generate exactly their share.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <set>

#include "base/InputError.h"
#include "harness/base/Json.h"
#include "harness/campaign/SeedStream.h"
#include "model/Generator.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

TEST(SeedStream, TheUnshardedStreamIsSplitmix64OfSeedAndIndex) {
  EXPECT_EQ(sequenceSeed(1, 0), 627405149472732430ULL);
  EXPECT_EQ(sequenceSeed(1, 1), 16860738450190168606ULL);
  EXPECT_EQ(sequenceSeed(1234, 7), 12302495093396609055ULL);
  for (uint64_t k = 0; k < 100; ++k)
    EXPECT_EQ(streamIndex(Shard{}, k), k);
}

TEST(SeedStream, ShardsAreDisjointAndTogetherTheUnshardedStream) {
  constexpr uint64_t kRuns = 1000;
  for (const uint64_t seed : {0ULL, 5ULL, 0xdeadbeefULL}) {
    std::set<uint64_t> unsharded;
    for (uint64_t i = 0; i < kRuns; ++i)
      unsharded.insert(sequenceSeed(seed, i));
    ASSERT_EQ(unsharded.size(), kRuns);
    for (uint64_t n = 1; n <= 9; ++n) {
      std::set<uint64_t> together;
      uint64_t total = 0;
      for (uint64_t shard = 0; shard < n; ++shard) {
        const Shard s{shard, n};
        uint64_t mine = 0;
        for (uint64_t k = 0; streamIndex(s, k) < kRuns; ++k, ++mine) {
          EXPECT_EQ(streamIndex(s, k) % n, shard);
          // Disjoint: no other shard generated it before.
          EXPECT_TRUE(together.insert(sequenceSeed(seed, streamIndex(s, k))).second);
        }
        EXPECT_EQ(mine, shardRuns(s, kRuns)) << shardText(s);
        total += mine;
      }
      EXPECT_EQ(total, kRuns);
      EXPECT_EQ(together, unsharded) << "N=" << n;
    }
  }
}

TEST(SeedStream, AShardGeneratesTheSameSequencesEveryTime) {
  const Shard s{2, 5};
  for (uint64_t k = 0; k < 50; ++k) {
    const uint64_t seed = sequenceSeed(77, streamIndex(s, k));
    EXPECT_EQ(printSequence(generateSequence(GeneratorConfig{}, seed)),
              printSequence(generateSequence(GeneratorConfig{}, sequenceSeed(77, 2 + 5 * k))));
  }
}

TEST(SeedStream, ShardsAreZeroBasedIOfN) {
  EXPECT_EQ(parseShard("0/4"), (Shard{0, 4}));
  EXPECT_EQ(parseShard("3/4"), (Shard{3, 4}));
  EXPECT_EQ(parseShard("0/1"), (Shard{0, 1}));
  for (const char* bad : {"4/4", "1/0", "0/0", "-1/4", "1", "1/", "/4", "a/4", "1/4/2", " 1/4"}) {
    EXPECT_THROW(parseShard(bad), InputError) << bad;
  }
  EXPECT_EQ(shardRuns(Shard{3, 4}, 3), 0U);
  EXPECT_EQ(shardRuns(Shard{0, 4}, 1), 1U);
  EXPECT_EQ(shardRuns(Shard{1, 4}, 10), 3U);  // 1, 5, 9
}

struct ShardRun {
  testing::CommandResult result;
  boost::json::object report;
  std::set<uint64_t> findingSeeds;  // the `seed` directive of every minimal.seq
};

ShardRun fuzzShard(const testing::ScratchDir& dir, const std::string& name,
                   const std::string& shard) {
  ShardRun r;
  const auto out = dir.path() / name;
  r.result = testing::gpufuzz(testing::kQuickSimFuzz +
                              " --policy no-texture-wait --faults strict-lifetimes --seed 5"
                              " --runs 24 --out " +
                              out.string() + " --report " + out.string() + ".json" + shard);
  r.report = readJsonFile(out.string() + ".json").as_object();
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    if (!std::filesystem::exists(entry.path() / "minimal.seq")) continue;
    r.findingSeeds.insert(*loadSequence((entry.path() / "minimal.seq").string()).directives.seed);
  }
  return r;
}

TEST(SeedStream, ShardedCampaignsRunTheirShareOfTheStream) {
  testing::ScratchDir dir;
  const ShardRun whole = fuzzShard(dir, "whole", "");
  ASSERT_EQ(whole.result.status, 1) << whole.result.output;
  EXPECT_EQ(whole.report.at("sequences").as_int64(), 24);
  std::map<std::string, int64_t> byClass;
  int64_t sequences = 0;
  for (uint64_t i = 0; i < 3; ++i) {
    const std::string shard = std::to_string(i) + "/3";
    const ShardRun part = fuzzShard(dir, "shard" + std::to_string(i), " --shard " + shard);
    ASSERT_NE(part.result.status, 2) << part.result.output;
    EXPECT_NE(part.result.output.find("shard " + shard), std::string::npos) << part.result.output;
    EXPECT_EQ(part.report.at("shard").as_string(), shard);
    EXPECT_EQ(part.report.at("sequences").as_int64(), 8);
    sequences += part.report.at("sequences").as_int64();
    for (const auto& [cls, n] : part.report.at("by_class").as_object())
      byClass[std::string(cls)] += n.as_int64();
    // What a shard found, it found in its own share of the stream.
    std::set<uint64_t> share;
    for (uint64_t k = 0; k < 8; ++k)
      share.insert(sequenceSeed(5, i + 3 * k));
    for (const uint64_t seed : part.findingSeeds)
      EXPECT_TRUE(share.count(seed)) << "shard " << shard << " found with seed " << seed;
  }
  EXPECT_EQ(sequences, 24);
  // The outcomes of this configuration are deterministic: the shards' classes add up.
  for (const auto& [cls, n] : whole.report.at("by_class").as_object())
    EXPECT_EQ(byClass[std::string(cls)], n.as_int64()) << cls;
}

TEST(SeedStream, ShardingNeedsAnExplicitSeedAndAValidShard) {
  testing::ScratchDir dir;
  const std::string out = " --runs 4 --out " + (dir.path() / "f").string();
  const auto noSeed = testing::gpufuzz(testing::kQuickSimFuzz + " --shard 0/2" + out);
  EXPECT_EQ(noSeed.status, 2);
  EXPECT_NE(noSeed.output.find("needs --seed"), std::string::npos) << noSeed.output;
  const auto outOfRange = testing::gpufuzz(testing::kQuickSimFuzz + " --seed 1 --shard 2/2" + out);
  EXPECT_EQ(outOfRange.status, 2);
  EXPECT_NE(outOfRange.output.find("--shard"), std::string::npos) << outOfRange.output;
  EXPECT_EQ(testing::gpufuzz(testing::kQuickSimFuzz + " --seed 1 --shard 1of2" + out).status, 2);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "f"));
}

}  // namespace
}  // namespace gpufuzz
