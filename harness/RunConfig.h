// RunConfig.h: what a sequence runs under (backend, policy, fault plan), from the command line
// first, then the file's directives, then the defaults of the contract (cli.md): backend auto;
// policy shipped; faults max-26.5.0 on sim and none on cuda.
#pragma once

#include <optional>
#include <string>

#include "model/Sequence.h"
#include "renderer/TeardownPolicy.h"

namespace gpufuzz {

/// Command-line choices; unset ones fall back to the file, then to the defaults.
struct RunOverrides {
  std::optional<std::string> backend;
  std::optional<std::string> policy;
  std::optional<std::string> faults;
};

struct RunConfig {
  std::string backend;  // sim | cuda | auto
  TeardownPolicy policy = TeardownPolicy::Shipped;
  /// The plan as --faults takes it (a built-in name or a path), or empty for the backend's
  /// default. A relative path from a file's `faults` directive is resolved against the file's
  /// directory, so a sequence replays from anywhere.
  std::string faults;
};

/// Throws InputError for an unknown policy or backend name.
RunConfig resolveRunConfig(const RunOverrides& overrides, const Directives& directives,
                           const std::string& sequenceFile);

/// The plan a run uses once its backend is known.
std::string faultsFor(const RunConfig& config, std::string_view backend);

}  // namespace gpufuzz
