// GraceTest.cpp: --time bounds generation; a failure found in time is shrunk within --grace
// (the default: finished, confirmed), or, with --grace 0, saved at once marked as cut short
// ("not confirmed (stopped)", `"stopped": true`, a note in minimal.seq).
#include <gtest/gtest.h>

#include <chrono>

#include "harness/base/AtomicFile.h"
#include "harness/campaign/StatsFile.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

/// Under context-first and max-26.5.0 seed 1 meets the seed's hang in its first sequences; with
/// a 300 ms deadline each run that confirms it takes about 300 ms.
const std::string kTimedFuzz =
    "fuzz --backend sim --quiet --jobs 2 --deadline 300 --no-explain "
    "--policy context-first --faults max-26.5.0 --seed 1 --time 2s";

std::vector<fs::path> findingDirs(const fs::path& out) {
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(out)) {
    if (entry.is_directory() && fs::exists(entry.path() / "signature")) dirs.push_back(entry);
  }
  return dirs;
}

TEST(Grace, ZeroSavesTheShrinkUnderWayMarkedAsCutShort) {
  testing::ScratchDir dir;
  const fs::path out = dir.path() / "findings";
  const auto started = Clock::now();
  // Eight confirmations outlast the 2 s whatever the harness's own speed: with two, a harness
  // that runs a sequence in about a millisecond at times finished the shrink and both of them.
  const auto r =
      testing::gpufuzz(kTimedFuzz + " --confirmations 8 --grace 0 --out " + out.string());
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  ASSERT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("not confirmed (stopped)"), std::string::npos) << r.output;
  EXPECT_LT(seconds, 20.0) << r.output;  // no shrink, no reproductions after the time
  const auto dirs = findingDirs(out);
  ASSERT_FALSE(dirs.empty()) << r.output;
  for (const fs::path& d : dirs) {
    const std::string json = readFile(d / "finding.json");
    EXPECT_NE(json.find("\"stopped\": true"), std::string::npos) << json;
    EXPECT_NE(json.find("\"confirmation\": \"not confirmed (stopped)\""), std::string::npos)
        << json;
    EXPECT_NE(readFile(d / "minimal.seq").find("cut short when --time and --grace were spent"),
              std::string::npos);
  }
  // The campaign did not run out its time: it was cut short.
  const std::optional<CampaignStats> stats = readStats(out / kStatsFile);
  ASSERT_TRUE(stats.has_value());
  EXPECT_FALSE(stats->finished);
  EXPECT_TRUE(stats->stopped);
  EXPECT_EQ(stats->stopReason, "--time and --grace spent");
  EXPECT_FALSE(stats->unfinished.empty()) << "the sequence cut short runs again when resumed";
}

TEST(Grace, TheDefaultFinishesTheShrinkAndItsConfirmations) {
  testing::ScratchDir dir;
  const fs::path out = dir.path() / "findings";
  const auto r = testing::gpufuzz(kTimedFuzz + " --confirmations 2 --out " + out.string());
  ASSERT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output.find("not confirmed (stopped)"), std::string::npos) << r.output;
  // The seed's hang, shrunk all the way (its well-known minimal sequence) and confirmed.
  const fs::path minimal = out / testing::seedHangId() / "minimal.seq";
  ASSERT_TRUE(fs::exists(minimal)) << r.output;
  EXPECT_EQ(normalizedOperations(loadSequence(minimal.string())),
            "create r0\ndestroy r0\ncreate r1\n");
  for (const fs::path& d : findingDirs(out)) {
    const std::string json = readFile(d / "finding.json");
    EXPECT_EQ(json.find("\"stopped\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"confirmation\": \"reproduced "), std::string::npos) << json;
    EXPECT_EQ(readFile(d / "minimal.seq").find("cut short"), std::string::npos);
  }
  const std::optional<CampaignStats> stats = readStats(out / kStatsFile);
  ASSERT_TRUE(stats.has_value());
  EXPECT_TRUE(stats->finished && !stats->stopped);
  EXPECT_EQ(stats->unfinished, std::vector<uint64_t>{});
}

TEST(Grace, ABadDurationIsRefusedBeforeAnythingRuns) {
  testing::ScratchDir dir;
  const auto r = testing::gpufuzz(kTimedFuzz + " --grace 5x --out " + (dir.path() / "f").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--grace: unknown unit 'x'"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir.path() / "f" / "stats.json"));
}

}  // namespace
}  // namespace gpufuzz
