// OptionDefaultsTest.cpp: the defaults and bounds of Options.def are what the commands use. Each
// test fails when a default written in the table disagrees with the code or the behaviour that
// holds without the option: the contract's run configuration, the campaign plan, the backends'
// profiles, and a campaign run with no options, checked against what `--help` prints.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "base/InputError.h"
#include "harness/base/AtomicFile.h"
#include "harness/base/ExitStatus.h"
#include "harness/base/RunConfig.h"
#include "harness/campaign/Campaign.h"
#include "harness/campaign/StatsFile.h"
#include "harness/cli/CommandLine.h"
#include "harness/search/Shrinker.h"
#include "harness/supervise/ComputeSanitizer.h"
#include "model/LifecycleModel.h"
#include "renderer/Backends.h"
#include "renderer/TeardownPolicy.h"
#include "renderer/device/DeviceError.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

/// The "[default: X; bounds: B]" of FLAG's line in `gpufuzz COMMAND --help`, as run.
struct HelpLine {
  std::string def;
  std::string bounds;
};
HelpLine helpOf(const std::string& command, const std::string& flag) {
  const auto r = testing::gpufuzz(command + " --help");
  EXPECT_EQ(r.status, 0) << r.output;
  std::smatch m;
  const std::regex line("\n  " + flag + " [^\n]*\\[default: ([^\n]*?)(; bounds: ([^\\]]*))?\\]\n");
  if (!std::regex_search(r.output, m, line)) {
    ADD_FAILURE() << "no line for " << flag << " in\n" << r.output;
    return {};
  }
  return {m[1], m[3]};
}

TEST(OptionDefaults, TheRunConfigurationsDefaultsAreTheTables) {
  const RunConfig contract = resolveRunConfig(RunOverrides{}, Directives{}, "");
  const CommandLine cl = parseCommandLine({"fuzz"});
  EXPECT_EQ(cl.value<Option::Backend>(), contract.backend);
  EXPECT_EQ(cl.value<Option::Policy>(), policyName(contract.policy));
  // The words for --faults name each backend's own default plan.
  const std::string faults = optionSpec(Option::Faults).shownDefault;
  for (const BackendInfo& b : backendRegistry()) {
    if (b.profile.defaultFaults == BackendProfile{}.defaultFaults) continue;
    EXPECT_NE(faults.find(std::string(b.profile.defaultFaults) + " on " + std::string(b.name)),
              std::string::npos)
        << faults;
  }
}

TEST(OptionDefaults, ACampaignPlansDefaultsAreTheTables) {
  const CommandLine cl = parseCommandLine({"fuzz"});
  const CampaignPlan plan;
  EXPECT_EQ(plan.grace, cl.value<Option::Grace>());
  EXPECT_EQ(plan.confirmations, cl.value<Option::Confirmations>());
  EXPECT_EQ(plan.persistent, cl.value<Option::Persistent>());
  // replay's tries of a threaded file: as many as a rate is ever measured with.
  EXPECT_EQ(parseCommandLine({"replay", "a.seq"}).value<Option::Confirmations>(),
            Shrinker::kMostTries);
  EXPECT_EQ(optionSpec(Option::Threads).max, kMaxThreads);
}

TEST(OptionDefaults, EveryChoiceIsAValueTheCodeKnows) {
  const CommandLine cl = parseCommandLine({"fuzz"});
  EXPECT_EQ(parseSanitizerOption(cl.value<Option::Sanitizer>()), SanitizerTool::None);
  for (const char* tool : {"none", "memcheck", "racecheck", "synccheck", "initcheck"}) {
    EXPECT_EQ(sanitizerToolName(parseSanitizerOption(
                  parseCommandLine({"fuzz", "--sanitizer", tool}).value<Option::Sanitizer>())),
              tool);
  }
  for (const char* ops : {"renderer", "device", "all"}) {
    EXPECT_TRUE(isBuiltinModelName(parseCommandLine({"fuzz", "--ops", ops}).value<Option::Ops>()))
        << ops;
  }
}

TEST(OptionDefaults, ACampaignWithoutOptionsRunsWithTheDefaultsHelpPrints) {
  testing::ScratchDir dir;
  // No --out, --policy, --faults, --ops, --threads, --persistent or --deadline: the defaults.
  const auto r = testing::runCommand("cd " + dir.path().string() + " && " +
                                     (testing::binDir() / "gpufuzz").string() +
                                     " fuzz --backend sim --runs 2 --seed 1 --quiet");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto stats = readStats(dir.path() / helpOf("fuzz", "--out").def / kStatsFile);
  ASSERT_TRUE(stats.has_value()) << r.output;
  EXPECT_EQ(stats->policy, helpOf("fuzz", "--policy").def);
  EXPECT_EQ(stats->ops, helpOf("fuzz", "--ops").def);
  EXPECT_EQ(std::to_string(stats->threads), helpOf("fuzz", "--threads").def);
  EXPECT_EQ(std::to_string(stats->persistent), helpOf("fuzz", "--persistent").def);
  EXPECT_EQ(stats->faults, findBackendProfile("sim")->defaultFaults);
  EXPECT_NE(stats->deadline.find("(" + helpOf("fuzz", "--deadline").def + ":"), std::string::npos)
      << stats->deadline;
}

TEST(OptionDefaults, AValueOutsideThePrintedBoundsIsExit2NamingTheBound) {
  for (const auto& [command, flag] :
       std::vector<std::pair<std::string, std::string>>{{"fuzz", "--threads"},
                                                        {"fuzz", "--max-ops"},
                                                        {"replay x.seq", "--confirmations"},
                                                        {"fuzz", "--persistent"},
                                                        {"shrink x.seq", "--jobs"}}) {
    const HelpLine help = helpOf(command.substr(0, command.find(' ')), flag);
    const auto dots = help.bounds.find("..");
    ASSERT_NE(dots, std::string::npos) << flag << ": " << help.bounds;
    const uint64_t min = std::stoull(help.bounds.substr(0, dots));
    const uint64_t max = std::stoull(help.bounds.substr(dots + 2));
    for (const uint64_t outside : {min - 1, max + 1}) {
      const auto r = testing::gpufuzz(command + " " + flag + " " + std::to_string(outside));
      EXPECT_EQ(r.status, 2) << r.output;
      EXPECT_NE(r.output.find(flag + ": " + std::to_string(outside) + " is out of bounds (" +
                              help.bounds + ")"),
                std::string::npos)
          << r.output;
    }
  }
}

TEST(OptionDefaults, HelpOfEverySubcommandAndOfAllIsPrinted) {
  const auto all = testing::gpufuzz("--help");
  EXPECT_EQ(all.status, 0);
  for (std::size_t i = 0; i < static_cast<std::size_t>(Option::Count); ++i) {
    const std::string flag = optionFlag(static_cast<Option>(i));
    EXPECT_NE(all.output.find("\n  " + flag + " "), std::string::npos) << flag;
  }
  const auto replay = testing::gpufuzz("replay --help");
  EXPECT_EQ(replay.status, 0);
  EXPECT_NE(replay.output.find("[default: 64; bounds: 1..1000]"), std::string::npos)
      << replay.output;
  EXPECT_EQ(replay.output.find("--max-ops"), std::string::npos) << replay.output;
}

TEST(ExitStatus, EachErrorHasItsStatus) {
  EXPECT_EQ(exitStatusOf("t", [] { return 1; }), 1);
  EXPECT_EQ(exitStatusOf("t", []() -> int { throw InputError("bad"); }), 2);
  EXPECT_EQ(exitStatusOf("t", []() -> int { throw DeviceUnavailable("none"); }), 2);
  EXPECT_EQ(exitStatusOf("t", []() -> int { throw WriteError("full"); }), 3);
  EXPECT_EQ(exitStatusOf("t", []() -> int { throw std::runtime_error("bug"); }), 3);
}

}  // namespace
}  // namespace gpufuzz
