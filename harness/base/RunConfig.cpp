// RunConfig.cpp: options over directives over defaults.
#include "harness/base/RunConfig.h"

#include <algorithm>
#include <filesystem>

#include "base/InputError.h"
#include "renderer/faults/FaultPlan.h"

namespace gpufuzz {

namespace {
std::string joinedPolicyNames() {
  std::string names;
  for (std::string_view n : policyNames())
    names += (names.empty() ? "" : ", ") + std::string(n);
  return names;
}
}  // namespace

ScheduleMode scheduleFor(std::optional<ScheduleMode> commandLine, const Directives& directives) {
  return commandLine.value_or(
      scheduleModeOf(directives.schedule.value_or("mix")).value_or(ScheduleMode::Mix));
}

RunConfig resolveRunConfig(const RunOverrides& overrides, const Directives& directives,
                           const std::string& sequenceFile) {
  RunConfig config;
  config.backend = overrides.backend.value_or(directives.backend.value_or("auto"));
  if (config.backend != "auto") backendInfo(config.backend);  // InputError for an unknown name
  config.backendOptions = overrides.backendOptions;
  if (!config.backendOptions.deviceMemory)
    config.backendOptions.deviceMemory = directives.deviceMemory;
  config.schedule = scheduleFor(overrides.schedule, directives);
  config.firstTry = directives.attempt.value_or(0);
  const std::string policy = overrides.policy.value_or(directives.policy.value_or("shipped"));
  const auto parsed = parsePolicy(policy);
  if (!parsed) {
    throw InputError("unknown policy '" + policy + "' (expected " + joinedPolicyNames() + ")");
  }
  config.policy = *parsed;
  if (overrides.faults) {
    config.faults = *overrides.faults;
  } else if (directives.faults) {
    config.faults = *directives.faults;
    config.faultsFromDirective = true;
    const auto builtins = builtinPlanNames();
    const bool builtin =
        std::find(builtins.begin(), builtins.end(), config.faults) != builtins.end();
    const std::filesystem::path path(config.faults);
    if (!builtin && path.is_relative() && !sequenceFile.empty() && sequenceFile != "-") {
      config.faults = (std::filesystem::path(sequenceFile).parent_path() / path).string();
    }
  }
  return config;
}

std::string faultsFor(const RunConfig& config, std::string_view backend) {
  if (!config.faults.empty()) return config.faults;
  const BackendProfile* profile = findBackendProfile(backend);  // none for a target
  return std::string(profile ? profile->defaultFaults : BackendProfile{}.defaultFaults);
}

void checkFaultPlan(const RunConfig& config, std::string_view backend, const Sequence& seq,
                    const std::string& file) {
  const std::string plan = faultsFor(config, backend);
  try {
    loadFaultPlan(plan);
  } catch (const InputError& e) {
    const auto place = seq.directivePlaces.find("faults");
    if (!config.faultsFromDirective || place == seq.directivePlaces.end()) throw;
    const auto [line, column] = place->second;
    if (e.line() == 0) throw InputError(file, line, column, "faults: " + e.message());
    throw InputError(
        e.file(), e.line(), e.column(),
        e.message() + " (in the plan named by " + file + ":" + std::to_string(line) + ")");
  }
}

}  // namespace gpufuzz
