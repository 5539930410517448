// CampaignStopTest.cpp: a campaign stopped by Ctrl-C (SIGINT), SIGTERM or kill -9 keeps every
// finding it reported, complete, and leaves no process of its own behind: no runner, no fork
// server, no forked child. Every process the campaign starts inherits a marker in its
// environment; after the stop, no live process carries it.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "harness/campaign/FindingStore.h"
#include "harness/campaign/StatsFile.h"
#include "model/Sequence.h"
#include "tests/harness/TestSupport.h"

extern char** environ;

namespace gpufuzz {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Live (not zombie) processes whose environment holds `marker`.
std::vector<pid_t> processesMarked(const std::string& marker) {
  std::vector<pid_t> found;
  DIR* proc = ::opendir("/proc");
  while (const dirent* entry = proc ? ::readdir(proc) : nullptr) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0 || pid == ::getpid()) continue;
    const std::string environ = readFile("/proc/" + std::string(entry->d_name) + "/environ");
    if (environ.find(marker) == std::string::npos) continue;
    const std::string stat = readFile("/proc/" + std::string(entry->d_name) + "/stat");
    const auto close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z') continue;
    found.push_back(pid);
  }
  if (proc) ::closedir(proc);
  return found;
}

/// Waits up to `limit` for no live process to carry `marker`; those left.
std::vector<pid_t> waitUntilNoneMarked(const std::string& marker, std::chrono::seconds limit) {
  const auto giveUp = Clock::now() + limit;
  std::vector<pid_t> left = processesMarked(marker);
  while (!left.empty() && Clock::now() < giveUp) {
    std::this_thread::sleep_for(20ms);
    left = processesMarked(marker);
  }
  return left;
}

/// The campaign the stop tests run unless told otherwise: it meets the seed's hang at once.
const std::string kSeedHangs = "--policy context-first --faults max-26.5.0 --seed 7";

/// A campaign started in the background, its output in a file.
struct BackgroundCampaign {
  pid_t pid = -1;
  std::string marker;
  fs::path out, log;

  BackgroundCampaign(const fs::path& dir, const std::string& extra,
                     const std::string& settings = kSeedHangs) {
    marker = "GPUFUZZ_STOP_TEST=" + std::to_string(::getpid()) + "-" + dir.filename().string();
    out = dir / "findings";
    log = dir / "campaign.log";
    const std::string command = "exec " + (testing::binDir() / "gpufuzz").string() +
                                " fuzz --backend sim " + settings +
                                " --deadline 150 --confirmations 2 --no-explain --jobs 2 "
                                "--time 120s --out " +
                                out.string() + " " + extra + " > " + log.string() + " 2>&1";
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e)
      env.emplace_back(*e);
    env.push_back(marker);
    std::vector<char*> envp;
    for (std::string& e : env)
      envp.push_back(e.data());
    envp.push_back(nullptr);
    const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
    if (::posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), envp.data()) !=
        0) {
      pid = -1;
    }
  }
  ~BackgroundCampaign() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }

  /// Waits (up to 60 s) for the first finding's folder to be complete.
  bool waitForFinding() const {
    const auto giveUp = Clock::now() + 60s;
    while (Clock::now() < giveUp) {
      if (fs::exists(out)) {
        for (const auto& entry : fs::directory_iterator(out)) {
          if (fs::exists(entry.path() / "finding.json")) return true;
        }
      }
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  /// Sends `sig`, then waits (up to 30 s) for the exit; the waitpid status, or -1.
  int stop(int sig) {
    ::kill(pid, sig);
    const auto giveUp = Clock::now() + 30s;
    int status = 0;
    while (Clock::now() < giveUp) {
      const pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) {
        pid = -1;
        return status;
      }
      std::this_thread::sleep_for(20ms);
    }
    return -1;
  }
};

/// Every finding folder is complete: its minimal sequence parses with its expectation, its
/// finding.json is whole. Returns how many there are.
std::size_t checkFindings(const fs::path& out) {
  std::size_t count = 0;
  for (const auto& entry : fs::directory_iterator(out)) {
    if (!entry.is_directory() || entry.path().filename() == "queue") continue;
    EXPECT_FALSE(entry.path().filename().string().starts_with("."))
        << "a finding folder was left half-written: " << entry.path();
    ++count;
    const fs::path minimal = entry.path() / "minimal.seq";
    EXPECT_TRUE(fs::exists(minimal)) << entry.path();
    if (!fs::exists(minimal)) continue;
    const Sequence seq = loadSequence(minimal.string());
    EXPECT_TRUE(seq.directives.expect.has_value()) << minimal;
    const std::string json = readFile(entry.path() / "finding.json");
    EXPECT_FALSE(json.empty()) << entry.path();
    EXPECT_EQ(json.find_last_not_of(" \n"), json.rfind('}')) << "truncated: " << json;
  }
  return count;
}

/// `extra`: more options for the campaign (--persistent: children that run many sequences).
void expectStoppedCleanly(int sig, const std::string& extra = "") {
  testing::ScratchDir dir;
  BackgroundCampaign campaign(dir.path(), extra);
  ASSERT_GT(campaign.pid, 0);
  ASSERT_TRUE(campaign.waitForFinding()) << readFile(campaign.log);
  ASSERT_FALSE(processesMarked(campaign.marker).empty()) << "the marker does not reach children";
  const int status = campaign.stop(sig);
  ASSERT_NE(status, -1) << "the campaign did not stop within 30 s:\n" << readFile(campaign.log);
  const std::string log = readFile(campaign.log);
  EXPECT_TRUE(WIFEXITED(status)) << log;
  EXPECT_EQ(WEXITSTATUS(status), 1) << "a finding was reported:\n" << log;
  EXPECT_NE(log.find("stopped: "), std::string::npos) << log;
  EXPECT_NE(log.find("unique finding(s) this run"), std::string::npos) << log;
  EXPECT_EQ(waitUntilNoneMarked(campaign.marker, 5s), std::vector<pid_t>{}) << log;
  EXPECT_GE(checkFindings(campaign.out), 1u);
  const std::optional<CampaignStats> stats = readStats(campaign.out / "stats.json");
  ASSERT_TRUE(stats.has_value());
  EXPECT_FALSE(stats->finished) << "a stopped campaign did not run out its --time";
  EXPECT_TRUE(stats->stopped);
  EXPECT_EQ(stats->stopReason, "stop requested");
}

TEST(CampaignStop, CtrlCKillsEveryChildPrintsASummaryAndKeepsTheFindings) {
  expectStoppedCleanly(SIGINT);
}

TEST(CampaignStop, SigtermStopsLikeCtrlC) {
  expectStoppedCleanly(SIGTERM);
}

TEST(CampaignStop, CtrlCEndsPersistentChildrenToo) {
  // Children that run many sequences each (and wait on their pipe between them) are killed too.
  expectStoppedCleanly(SIGINT, "--persistent 50");
}

void expectKillDashNineLosesNothing(const std::string& extra) {
  testing::ScratchDir dir;
  std::size_t reported = 0;
  {
    BackgroundCampaign campaign(dir.path(), extra);
    ASSERT_GT(campaign.pid, 0);
    ASSERT_TRUE(campaign.waitForFinding()) << readFile(campaign.log);
    std::this_thread::sleep_for(500ms);  // children running, maybe a shrink in flight
    ASSERT_NE(campaign.stop(SIGKILL), -1);
    EXPECT_EQ(waitUntilNoneMarked(campaign.marker, 5s), std::vector<pid_t>{})
        << readFile(campaign.log);
    reported = checkFindings(campaign.out);
    EXPECT_GE(reported, 1u);
  }
  // A campaign on the same folder knows them all.
  const auto again = testing::gpufuzz(
      "fuzz --backend sim --policy context-first --faults max-26.5.0 --quiet --no-explain "
      "--runs 1 --seed 8 --out " +
      (dir.path() / "findings").string());
  EXPECT_NE(again.output.find("(" + std::to_string(reported) + " known)"), std::string::npos)
      << again.output;
}

TEST(CampaignStop, KillDashNineLeavesNoChildAndLosesNoReportedFinding) {
  expectKillDashNineLosesNothing("");
}

TEST(CampaignStop, KillDashNineLeavesNoPersistentChild) {
  expectKillDashNineLosesNothing("--persistent 50");
}

// Slurm signals every process of a job it cancels or requeues, at times a child before the
// campaign. The finding under shrink then is kept (marked as cut short), not taken for a failure
// that did not reproduce, and its sequence is where a resumed campaign goes on.
TEST(CampaignStop, AJobStopThatReachesTheChildrenFirstKeepsTheFindingUnderShrink) {
  testing::ScratchDir dir;
  BackgroundCampaign campaign(dir.path(), "--jobs 1 --confirmations 1");
  ASSERT_GT(campaign.pid, 0);
  const fs::path statsFile = campaign.out / "stats.json";
  const auto giveUp = Clock::now() + 60s;
  while (readFile(statsFile).find("\"shrinking\": \"shrinking") == std::string::npos) {
    ASSERT_LT(Clock::now(), giveUp) << "no shrink began:\n" << readFile(campaign.log);
    std::this_thread::sleep_for(20ms);
  }
  // The job's stop reaches every child started in the next half second before the campaign.
  for (const auto until = Clock::now() + 500ms; Clock::now() < until;) {
    for (const pid_t child : processesMarked(campaign.marker)) {
      if (child != campaign.pid) ::kill(child, SIGTERM);
    }
    std::this_thread::sleep_for(5ms);
  }
  const int status = campaign.stop(SIGTERM);
  ASSERT_NE(status, -1) << "the campaign did not stop within 30 s:\n" << readFile(campaign.log);
  const std::string log = readFile(campaign.log);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << "a finding was reported:\n" << log;
  EXPECT_GE(checkFindings(campaign.out), 1u) << log;
  const std::optional<CampaignStats> stats = readStats(statsFile);
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->run.unconfirmed, 0u) << log;
  EXPECT_EQ(stats->run.byClass[static_cast<std::size_t>(OutcomeClass::Crash)], 0u)
      << "a child ended by the job's SIGTERM is no crash:\n"
      << log;
  EXPECT_GE(stats->uniqueFindings, 1u) << log;
  ASSERT_TRUE(stats->nextSequence.has_value());
  EXPECT_EQ(stats->unfinished, std::vector<uint64_t>{*stats->nextSequence - 1})
      << "the sequence under shrink runs again when the campaign resumes";
  EXPECT_EQ(stats->run.sequences + 1, *stats->nextSequence)
      << "the sequence cut short counts when it runs again, not now";
  EXPECT_EQ(waitUntilNoneMarked(campaign.marker, 5s), std::vector<pid_t>{}) << log;
}

// A --time campaign stopped while one worker shrinks and the other goes on, then resumed in its
// folder: the stream is covered once. Every sequence begun is counted once it is done, or listed
// as unfinished and run (and counted) by the resumed campaign; the two halves' cumulative counts
// are those of one uninterrupted run of the same sequences.
TEST(CampaignStop, AStoppedCampaignResumedCountsEverySequenceOnce) {
  testing::ScratchDir dir;
  const fs::path plan = testing::sourceDir() / "tests/harness/campaign/plans/rare-hang.plan";
  // Blind: the stream alone. Under guided search a mutant may find the hang first, and a mutant
  // takes no index of the stream, so its shrink leaves nothing unfinished.
  const std::string settings =
      "--policy shipped --faults " + plan.string() + " --seed 5 --search blind";
  const fs::path out = dir.path() / "findings";
  const fs::path statsFile = out / "stats.json";
  {
    BackgroundCampaign campaign(dir.path(), "", settings);
    ASSERT_GT(campaign.pid, 0);
    const auto giveUp = Clock::now() + 60s;
    while (readFile(statsFile).find("\"shrinking\": \"shrinking") == std::string::npos) {
      ASSERT_LT(Clock::now(), giveUp) << "no shrink began:\n" << readFile(campaign.log);
      std::this_thread::sleep_for(20ms);
    }
    std::this_thread::sleep_for(300ms);  // the other worker goes on meanwhile
    ASSERT_NE(campaign.stop(SIGINT), -1) << readFile(campaign.log);
  }
  const std::optional<CampaignStats> first = readStats(statsFile);
  ASSERT_TRUE(first.has_value() && first->nextSequence.has_value());
  EXPECT_TRUE(first->stopped && !first->finished);
  EXPECT_EQ(first->run.harnessErrors, 0u);
  EXPECT_FALSE(first->unfinished.empty()) << "the sequence under shrink was cut short";
  EXPECT_EQ(first->cumulative.sequences + first->unfinished.size(), *first->nextSequence)
      << "a sequence is counted, or unfinished, never both";

  const std::string again = "fuzz --backend sim " + settings +
                            " --deadline 150 --confirm-deadline 600 --confirmations 2 "
                            "--no-explain --jobs 2 --quiet --out " +
                            out.string();
  const auto resumed = testing::gpufuzz(again + " --time 4s");
  const std::optional<CampaignStats> second = readStats(statsFile);
  ASSERT_TRUE(second.has_value() && second->nextSequence.has_value()) << resumed.output;
  EXPECT_NE(resumed.output.find("continuing the stream of seed 5 at its sequence " +
                                std::to_string(*first->nextSequence)),
            std::string::npos)
      << resumed.output;
  EXPECT_TRUE(second->finished && !second->stopped) << resumed.output;
  EXPECT_EQ(second->cumulative.campaigns, 2u);
  EXPECT_EQ(second->unfinished, std::vector<uint64_t>{});
  EXPECT_GE(*second->nextSequence, *first->nextSequence);
  EXPECT_EQ(second->cumulative.harnessErrors, 0u) << resumed.output;
  EXPECT_EQ(second->cumulative.sequences, *second->nextSequence)
      << "sequences counted twice or not at all:\n"
      << resumed.output;

  // The same sequences in one uninterrupted run (in the same folder: its findings are known).
  const auto whole = testing::gpufuzz(again + " --runs " + std::to_string(*second->nextSequence));
  const std::optional<CampaignStats> third = readStats(statsFile);
  ASSERT_TRUE(third.has_value()) << whole.output;
  EXPECT_TRUE(third->finished) << whole.output;
  EXPECT_EQ(third->run.sequences, second->cumulative.sequences);
  // A `slow` is a pass past its latency budget, which the VM's load decides: under load one
  // half met a slow where the whole run passed. It counts as a pass here.
  const auto classes = [](std::array<uint64_t, kOutcomeClassCount> byClass) {
    byClass[static_cast<std::size_t>(OutcomeClass::Pass)] +=
        std::exchange(byClass[static_cast<std::size_t>(OutcomeClass::Slow)], 0);
    return byClass;
  };
  EXPECT_EQ(classes(third->run.byClass), classes(second->cumulative.byClass)) << whole.output;
  EXPECT_GE(second->cumulative.byClass[static_cast<std::size_t>(OutcomeClass::Hang)], 1u);
}

}  // namespace
}  // namespace gpufuzz
