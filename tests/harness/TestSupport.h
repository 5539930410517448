// TestSupport.h: what harness tests share: a temporary directory, the built executables and the
// checkout (tests/ProjectPaths.h), and a command run with its output captured.
#pragma once

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "harness/campaign/FindingStore.h"
#include "harness/search/Trial.h"
#include "tests/ProjectPaths.h"
#include "tests/ScratchDir.h"

namespace gpufuzz::testing {

struct CommandResult {
  int status = -1;     // exit status, or -1 when it did not exit normally
  std::string output;  // stdout and stderr
};

inline CommandResult runCommand(const std::string& command) {
  CommandResult r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    r.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// `gpufuzz ARGS`, run and captured.
inline CommandResult gpufuzz(const std::string& args) {
  return runCommand((binDir() / "gpufuzz").string() + " " + args);
}

/// A short campaign on sim: fixed deadline, two jobs, two confirmations, nothing explained.
/// Under `--policy context-first --faults max-26.5.0` it finds the seed's hang within seconds.
inline const std::string kQuickSimFuzz =
    "fuzz --backend sim --quiet --jobs 2 --deadline 150 --confirmations 2 --no-explain";

/// A finding as a campaign on sim records it: the minimal sequence `ops` with the directives
/// that replay it, failing as `cls` at operation `at` (of kind `op`).
inline Finding simFinding(const std::string& ops, OutcomeClass cls, uint32_t at,
                          const std::string& op, const std::string& policy,
                          const std::string& faults) {
  Finding f;
  f.minimal = parseSequence(ops, "minimal.seq");
  f.minimal.directives.backend = "sim";
  f.minimal.directives.policy = policy;
  f.minimal.directives.faults = faults;
  f.minimal.directives.expect = Expectation{cls, At{at}};
  f.outcome = RunOutcome{cls, At{at}, op, "as recorded", {}};
  f.original = ops;
  return f;
}

/// The folder name of the seed's hang, shrunk to `create r0; destroy r0; create r1` and stuck at
/// 3 (create), as a campaign on sim records it: of the model `fuzz` generates in (`--ops`,
/// renderer by default), whose name and hash the signature holds.
inline std::string seedHangId(std::string_view model = "renderer") {
  Finding f;
  f.minimal = parseSequence("create r0\ndestroy r0\ncreate r1\n", "seed.seq", &builtinModel(model));
  f.outcome = RunOutcome{OutcomeClass::Hang, At{3}, "create", "", {}};
  return f.id();
}

/// Sim's deadlines with a confirmation floor short enough for tests; with `fixed`, that deadline
/// instead of calibrated ones.
inline DeadlineSettings simDeadlines(std::optional<Millis> fixed = std::nullopt) {
  DeadlineSettings s = DeadlineSettings::forBackend("sim");
  if (fixed) s.fixed = *fixed;
  s.confirmFloor = Millis{1'000};
  return s;
}

/// A trial runner on sim, as a campaign would build it.
struct SimTrials {
  ScratchDir work;
  DeadlineCalibrator deadlines{simDeadlines()};
  TrialRunner runner;
  /// `stacks`: a stuck child's stacks are taken where a run asks for evidence.
  SimTrials(TeardownPolicy policy, const std::string& faults, bool stacks = false)
      : runner(setupFor(policy, faults, work.path(), stacks), deadlines) {}

  static TrialSetup setupFor(TeardownPolicy policy, const std::string& faults,
                             const std::filesystem::path& workDir, bool stacks = false) {
    TrialSetup setup;
    setup.runner = (binDir() / "gpufuzz-runner").string();
    setup.backend = "sim";
    setup.policy = policy;
    setup.faults = faults;
    setup.workDir = workDir;
    setup.captureStacks = stacks;
    return setup;
  }
};

}  // namespace gpufuzz::testing
