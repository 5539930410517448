// ReportFile.h: the `--report FILE` JSON summary of docs/cli.md, written atomically.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/base/RunOutcome.h"
#include "harness/campaign/FindingStore.h"
#include "harness/search/Trial.h"

namespace gpufuzz {

struct ReplayResult {
  std::string file;
  RunOutcome outcome;
  Expectation expected;
  bool met = false;
};

struct ReportedFinding {
  Finding finding;
  std::string file;  // its minimal.seq
};

struct Report {
  std::string command;
  uint64_t seed = 0;
  std::string backend, policy, faults;
  std::string target, targetVersion;  // --target's, when one ran
  /// Sets backend, policy, faults and target from what the trials ran under.
  void describeRun(const TrialSetup& setup);
  uint64_t executions = 0;
  double elapsedSeconds = 0;
  std::vector<ReplayResult> results;
  std::vector<ReportedFinding> findings;
  /// Extra top-level fields (already JSON), e.g. "by_class".
  std::vector<std::pair<std::string, std::string>> extra;
};

std::string reportJson(const Report& report);
void writeReport(const std::filesystem::path& path, const Report& report);

}  // namespace gpufuzz
