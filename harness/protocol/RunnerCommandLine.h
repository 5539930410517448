// RunnerCommandLine.h: gpufuzz-runner's command line (docs/cli.md, gpufuzz-runner), declared once.
// The harness writes it with runnerArgs() when it starts or probes a child; the runner reads it
// with parseRunnerArgs(). Both go through the one table of RunnerCommandLine.cpp, so what one
// side writes the other parses to the same values.
//
//   gpufuzz-runner [--backend NAME|auto] [--device TEXT] [--validation on|off] [--policy NAME]
//                  [--faults NAME|PATH] [--events-fd N] [--schedule S] [--try N] [--quiet] FILE
//   gpufuzz-runner [options as above] --persistent FIFO
//   gpufuzz-runner --probe [--backend NAME|auto] [--device TEXT] [--validation on|off]
//   gpufuzz-runner --fork-server     (ForkServerProtocol.h)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/base/RunConfig.h"

namespace gpufuzz {

/// The runner's file name, beside gpufuzz, and the name its messages begin with.
inline constexpr const char* kRunnerProgram = "gpufuzz-runner";
/// The interposer preloaded into targets, beside the runner (docs/failures.md, Targets).
inline constexpr const char* kInterposerLibrary = "libgpufuzz-interpose.so";
/// The folder beside the runner that holds the interposer's Vulkan layer manifest, and the layer.
inline constexpr const char* kVulkanLayerFolder = "vulkan-layer";
inline constexpr const char* kVulkanLayerName = "VK_LAYER_GPUFUZZ_failures";

struct RunnerArgs {
  /// --backend, --policy, --faults, --device, --validation: unset ones leave the file's
  /// directives, then the contract's defaults (RunConfig.h).
  RunOverrides overrides;
  /// --events-fd N: where events go; unset: GPUFUZZ_EVENTS_FD.
  std::optional<int> eventsFd;
  /// --try N: which try of a threaded sequence this is: it seeds the threads' schedule. Unset:
  /// the file's `try`, else 0.
  std::optional<uint64_t> attempt;
  /// --quiet: no line per operation on stdout.
  bool quiet = false;
  /// --probe: make the backend, print what it runs on, exit.
  bool probe = false;
  /// --persistent FIFO: sequence files' paths, a line each, from the named pipe FIFO.
  std::string persistent;
  /// FILE: the sequence file (none with --probe or --persistent).
  std::string file;

  bool operator==(const RunnerArgs&) const = default;
};

/// The words after the program that give `args` (what differs from a default RunnerArgs).
std::vector<std::string> runnerArgs(const RunnerArgs& args);

/// Reads the runner's arguments (no program name); InputError for bad usage: an unknown option,
/// a bad value, a value out of bounds, two files, or a mode without what it needs.
RunnerArgs parseRunnerArgs(const std::vector<std::string>& argv);

/// The runner's usage with every option, its default and bounds (`gpufuzz-runner --help`).
std::string runnerUsageText();

}  // namespace gpufuzz
