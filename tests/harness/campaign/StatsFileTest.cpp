// StatsFileTest.cpp: the campaign's stats.json: written while it runs and when it ends, readable,
// consistent with the report; and resumed campaigns: a second campaign in the same folder knows
// the earlier findings and continues the cumulative counts, also in a folder merged into.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "harness/base/AtomicFile.h"
#include "harness/base/Json.h"
#include "harness/campaign/StatsFile.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

const std::string kStrict =
    testing::kQuickSimFuzz + " --policy no-texture-wait --faults strict-lifetimes --seed 5";

std::size_t findingFolders(const std::filesystem::path& root) {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root))
    n += std::filesystem::exists(entry.path() / "signature") ? 1 : 0;
  return n;
}

TEST(Stats, TheStatsFileAgreesWithTheReport) {
  testing::ScratchDir dir;
  const auto out = dir.path() / "findings";
  const auto reportFile = dir.path() / "report.json";
  const auto r = testing::gpufuzz(kStrict + " --runs 24 --out " + out.string() + " --report " +
                                  reportFile.string());
  ASSERT_EQ(r.status, 1) << r.output;
  const boost::json::object report = readJsonFile(reportFile.string()).as_object();
  // Any JSON reader can take it; these are the fields docs/campaigns.md names.
  const boost::json::object json = readJsonFile((out / kStatsFile).string()).as_object();
  for (const char* field :
       {"start_time",    "last_update",   "pid",        "command_line",    "seed",
        "shard",         "backend",       "policy",     "faults",          "executions",
        "execs_per_sec", "sequences",     "by_class",   "unique_findings", "last_find",
        "deadline",      "shrinking",     "cumulative", "finished",        "stopped",
        "device",        "next_sequence", "unfinished", "deadline_by_kind"}) {
    EXPECT_TRUE(json.contains(field)) << field;
  }
  const CampaignStats s = *readStats(out / kStatsFile);
  EXPECT_TRUE(s.finished);
  EXPECT_FALSE(s.stopped);
  EXPECT_EQ(s.stopReason, "");
  EXPECT_EQ(s.unfinished, std::vector<uint64_t>{});
  // What the runs were on, as the runner's probe describes it, in both files.
  EXPECT_NE(s.device, "");
  EXPECT_EQ(s.device, report.at("device").as_string());
  EXPECT_EQ(s.seed, 5U);
  EXPECT_FALSE(s.shard.has_value());
  EXPECT_EQ(s.backend, "sim");
  EXPECT_EQ(s.policy, "no-texture-wait");
  EXPECT_EQ(s.faults, "strict-lifetimes");
  EXPECT_GT(s.pid, 0);
  EXPECT_NE(s.commandLine.find("--seed 5"), std::string::npos) << s.commandLine;
  EXPECT_LE(s.startTime, s.lastUpdate);
  EXPECT_EQ(s.deadline, "150 ms (fixed)");
  EXPECT_EQ(s.deadlineByKind, "") << "a fixed deadline has no kinds";
  EXPECT_EQ(s.run.executions, report.at("executions").to_number<uint64_t>());
  EXPECT_EQ(s.run.sequences, 24U);
  EXPECT_EQ(s.run.sequences, report.at("sequences").to_number<uint64_t>());
  for (std::size_t c = 0; c < s.run.byClass.size(); ++c) {
    const auto name = outcomeClassName(static_cast<OutcomeClass>(c));
    EXPECT_EQ(s.run.byClass[c], report.at("by_class").at(name).to_number<uint64_t>()) << name;
  }
  EXPECT_EQ(s.newFindings, report.at("findings").as_array().size());
  EXPECT_EQ(s.uniqueFindings, findingFolders(out));
  EXPECT_TRUE(s.lastFind.has_value());
  EXPECT_GT(s.execsPerSecond, 0.0);
  EXPECT_EQ(s.cumulative.campaigns, 1U);
  EXPECT_EQ(s.cumulative.executions, s.run.executions);
  EXPECT_EQ(s.cumulative.byClass, s.run.byClass);
}

TEST(Stats, RewrittenWhileTheCampaignRuns) {
  testing::ScratchDir dir;
  const auto out = dir.path() / "findings";
  const auto during = dir.path() / "during.json";
  const auto r =
      // No fault and a loose deadline: nothing to examine past --time. kStrict's shrinks took 30 s
      // on a loaded VM.
      testing::runCommand(
          "sh -c '" + (testing::binDir() / "gpufuzz").string() + " " + testing::kQuickSimFuzz +
          " --faults none --seed 5 --deadline 2000 --time 3 --out " + out.string() +
          " & sleep 1.5; cp " + (out / kStatsFile).string() + " " + during.string() + "; wait'");
  ASSERT_NE(r.status, 2) << r.output;
  const auto mid = readStats(during);
  ASSERT_TRUE(mid.has_value()) << r.output;
  EXPECT_FALSE(mid->finished);
  EXPECT_GE(mid->lastUpdate - mid->startTime, 1);
  const auto end = readStats(out / kStatsFile);
  EXPECT_TRUE(end->finished);
  EXPECT_GT(end->run.executions, mid->run.executions);
  EXPECT_GT(end->lastUpdate, mid->lastUpdate);
}

TEST(Stats, AResumedCampaignKnowsTheFindingsAndContinuesTheCounts) {
  testing::ScratchDir dir;
  const auto out = dir.path() / "findings";
  const std::string command = kStrict + " --runs 24 --out " + out.string();
  ASSERT_EQ(testing::gpufuzz(command).status, 1);
  const CampaignStats first = *readStats(out / kStatsFile);
  const std::size_t folders = findingFolders(out);
  ASSERT_GE(folders, 1U);
  uint64_t hitsBefore = 0;
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    if (const auto f = readStoredFinding(entry.path())) hitsBefore += f->hits;
  }

  const auto again = testing::gpufuzz(command);
  EXPECT_EQ(again.status, 1) << again.output;
  EXPECT_NE(again.output.find("(" + std::to_string(folders) + " known)"), std::string::npos)
      << again.output;
  EXPECT_NE(again.output.find("continuing the counts of 1 earlier campaign(s)"), std::string::npos)
      << again.output;
  EXPECT_EQ(findingFolders(out), folders) << "the same bugs, no new folders";
  uint64_t hitsAfter = 0;
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    if (const auto f = readStoredFinding(entry.path())) hitsAfter += f->hits;
  }
  EXPECT_GT(hitsAfter, hitsBefore);
  const CampaignStats second = *readStats(out / kStatsFile);
  EXPECT_EQ(second.newFindings, 0U);
  EXPECT_EQ(second.uniqueFindings, folders);
  EXPECT_EQ(second.cumulative.campaigns, 2U);
  EXPECT_EQ(second.cumulative.sequences, 48U);
  EXPECT_EQ(second.cumulative.executions, first.run.executions + second.run.executions);
  EXPECT_EQ(second.lastFind, first.lastFind) << "nothing new was found";
}

// A time-bounded campaign of the same seed and settings goes on with the stream where the last
// one stopped (a requeued shard does not run its first hours again); a --runs campaign runs its
// fixed set again, and the place to go on from stays; another seed starts its own stream.
TEST(Stats, ATimeBoundedCampaignResumedGoesOnWithItsStream) {
  testing::ScratchDir dir;
  const std::string out = (dir.path() / "findings").string();
  const std::string timed = " fuzz --backend sim --faults none --quiet --jobs 2 --time 1s --out ";
  ASSERT_EQ(testing::gpufuzz(timed + out + " --seed 9 --shard 1/3").status, 0);
  const CampaignStats first = *readStats(std::filesystem::path(out) / kStatsFile);
  ASSERT_TRUE(first.nextSequence);
  EXPECT_EQ(*first.nextSequence, first.run.sequences) << "every sequence begun was finished";

  const auto again = testing::gpufuzz(timed + out + " --seed 9 --shard 1/3");
  EXPECT_NE(again.output.find("continuing the stream of seed 9 at its sequence " +
                              std::to_string(*first.nextSequence)),
            std::string::npos)
      << again.output;
  const CampaignStats second = *readStats(std::filesystem::path(out) / kStatsFile);
  EXPECT_EQ(*second.nextSequence, *first.nextSequence + second.run.sequences);

  const auto counted = testing::gpufuzz(timed.substr(0, timed.find("--time")) + "--runs 30 --out " +
                                        out + " --seed 9 --shard 1/3");
  EXPECT_EQ(counted.output.find("continuing the stream"), std::string::npos) << counted.output;
  EXPECT_EQ(readStats(std::filesystem::path(out) / kStatsFile)->nextSequence, second.nextSequence);

  const auto other = testing::gpufuzz(timed + out + " --seed 10 --shard 1/3");
  EXPECT_EQ(other.output.find("continuing the stream"), std::string::npos) << other.output;
}

TEST(Stats, ACampaignInAMergedFolderContinuesOnlyItsOwnCounts) {
  testing::ScratchDir dir;
  const auto shard = dir.path() / "shard";
  const auto merged = dir.path() / "merged";
  ASSERT_EQ(testing::gpufuzz(kStrict + " --runs 24 --out " + shard.string()).status, 1);
  ASSERT_EQ(testing::gpufuzz("merge " + shard.string() + " --out " + merged.string()).status, 0);
  const auto own = testing::gpufuzz(kStrict + " --runs 12 --out " + merged.string());
  ASSERT_EQ(own.status, 1) << own.output;
  EXPECT_EQ(own.output.find("continuing the counts"), std::string::npos) << own.output;
  const CampaignStats ownStats = *readStats(merged / kStatsFile);
  EXPECT_EQ(ownStats.cumulative.campaigns, 1U);
  EXPECT_EQ(ownStats.cumulative.sequences, 12U);
  // Merging again: the shard's and the folder's own campaigns, each once.
  ASSERT_EQ(testing::gpufuzz("merge " + shard.string() + " --out " + merged.string()).status, 0);
  const CampaignStats total = *readStats(merged / kStatsFile);
  EXPECT_EQ(total.cumulative.campaigns, 2U);
  EXPECT_EQ(total.cumulative.sequences, 36U);
  ASSERT_EQ(testing::gpufuzz("merge " + shard.string() + " --out " + merged.string()).status, 0);
  EXPECT_EQ(readStats(merged / kStatsFile)->cumulative.sequences, 36U);
}

TEST(Stats, ABrokenStatsFileIsBadInput) {
  testing::ScratchDir dir;
  const auto out = dir.path() / "findings";
  writeFileAtomically(out / kStatsFile, "{\"cumulative\": [");
  const auto r = testing::gpufuzz(kStrict + " --runs 2 --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("stats.json: not JSON"), std::string::npos) << r.output;
}

TEST(Stats, TheHelpNamesTheScaleOutCommands) {
  const auto r = testing::gpufuzz("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* text : {"gpufuzz promote", "gpufuzz merge", "--shard I/N", "--corpus DIR",
                           "--name NAME", "--force"}) {
    EXPECT_NE(r.output.find(text), std::string::npos) << text << " in\n" << r.output;
  }
}

}  // namespace
}  // namespace gpufuzz
