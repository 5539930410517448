// RunConfig.h: what a sequence runs under (backend, policy, fault plan), from the command line
// first, then the file's directives, then the defaults of the contract (docs/cli.md): backend auto;
// policy shipped; faults max-26.5.0 on sim and none on every real backend.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "model/Schedule.h"
#include "model/Sequence.h"
#include "renderer/Backends.h"
#include "renderer/TeardownPolicy.h"

namespace gpufuzz {

/// Command-line choices; unset ones fall back to the file, then to the defaults.
struct RunOverrides {
  std::optional<std::string> backend;
  std::optional<std::string> policy;
  std::optional<std::string> faults;
  /// --device and --validation: the command line only (no directive names a device).
  BackendOptions backendOptions;
  /// --schedule: how a threaded run's threads interleave at runtime calls.
  std::optional<ScheduleMode> schedule;
  bool operator==(const RunOverrides&) const = default;
};

struct RunConfig {
  std::string backend;  // a backend name of the registry (Backends.h), or auto
  TeardownPolicy policy = TeardownPolicy::Shipped;
  /// The plan as --faults takes it (a built-in name or a path), or empty for the backend's
  /// default. A relative path from a file's `faults` directive is resolved against the file's
  /// directory, so a sequence replays from anywhere.
  std::string faults;
  /// Whether `faults` came from the file's directive (not from --faults).
  bool faultsFromDirective = false;
  BackendOptions backendOptions;
  /// The command line's, else the file's `schedule`, else mix (docs/sequences.md, Threads).
  ScheduleMode schedule = ScheduleMode::Mix;
  /// The file's `try`: the first try a replay, shrink or explanation runs.
  uint64_t firstTry = 0;
};

/// The schedule a run's threads take turns by: the command line's, else the file's, else mix.
ScheduleMode scheduleFor(std::optional<ScheduleMode> commandLine, const Directives& directives);

/// Throws InputError for an unknown policy or backend name.
RunConfig resolveRunConfig(const RunOverrides& overrides, const Directives& directives,
                           const std::string& sequenceFile);

/// The plan a run uses once its backend is known: the configuration's, else the backend's
/// profile's default (Backends.h); "none" for a name outside the registry (a target).
std::string faultsFor(const RunConfig& config, std::string_view backend);

/// Reads and parses the plan a run of `seq` (read from `file`) uses on `backend`, so that a
/// malformed plan or a missing plan file is bad input before any child runs (InputError). A
/// missing plan named by the file's `faults` directive is placed at that directive
/// (FILE:LINE:COLUMN); an error inside a plan keeps the plan's place and names the directive.
void checkFaultPlan(const RunConfig& config, std::string_view backend, const Sequence& seq,
                    const std::string& file);

}  // namespace gpufuzz
