// ComputeSanitizer.h: a child run under NVIDIA's compute-sanitizer, and its report as an outcome.
//
// With --sanitizer TOOL the runner is started as
//   compute-sanitizer --tool TOOL [--leak-check full] --error-exitcode 86 --log-file LOG
//                     --print-limit 100 RUNNER ARGS...
// always as a fresh process (a fork server's children would escape the sanitizer). The log is
// compute-sanitizer's text report: records of lines prefixed "========= ", a record's first line
// unindented after the prefix and its details (addresses, threads, host backtraces) indented:
//   ========= Invalid __global__ write of size 4 bytes
//   =========     at rasterKernel(...)+0x1a0
//   =========     Address 0x7f3c00000400 is out of bounds
//   ========= Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to "invalid argument" on CUDA API
//   call to cuMemFree_v2.
//   ========= Leaked 1024 bytes at 0x7f3c00000000
//   ========= LEAK SUMMARY: 1024 bytes leaked in 1 allocations
//   ========= ERROR SUMMARY: 2 errors
// What it reports becomes the run's outcome: an invalid access, a race, a synchronization or
// initialization error or an API call's error is `invalid` with the first such record; leaked
// allocations are `leak` when the runner itself found the leak at its end, and otherwise
// `invalid` at the destroy that left them (memcheck checks for leaks at every context destroy,
// so leaks the runner did not see at its end were alive when a context of it was destroyed).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/supervise/ChildCommand.h"
#include "harness/supervise/Supervisor.h"
#include "model/Outcome.h"

namespace gpufuzz {

enum class SanitizerTool : uint8_t { None, Memcheck, Racecheck, Synccheck, Initcheck };

/// "none", "memcheck", ...; throws InputError naming the choices for anything else.
SanitizerTool parseSanitizerOption(const std::string& text);
std::string_view sanitizerToolName(SanitizerTool tool);

/// compute-sanitizer's path: $GPUFUZZ_COMPUTE_SANITIZER, else the first of PATH, $CUDA_HOME/bin,
/// /usr/local/cuda/bin and /usr/local/cuda/compute-sanitizer that is executable; nothing when
/// none is.
std::optional<std::string> findComputeSanitizer();

/// The exit status compute-sanitizer is told to give when it found errors.
inline constexpr int kSanitizerErrorExit = 86;

/// `command` run under compute-sanitizer at `sanitizer` with `tool`, writing its report to `log`.
ChildCommand underSanitizer(const ChildCommand& command, SanitizerTool tool,
                            const std::string& sanitizer, const std::filesystem::path& log);

struct SanitizerRecord {
  enum class Kind : uint8_t { Error, Leak };
  Kind kind = Kind::Error;
  /// The record's first line, without the prefix: "Invalid __global__ write of size 4 bytes".
  std::string headline;
  /// The whole record, prefixes removed, one line each.
  std::string text;
};

struct SanitizerReport {
  std::vector<SanitizerRecord> records;
  /// From "ERROR SUMMARY: N errors", when the log has one.
  std::optional<unsigned> errorSummary;
  bool hasErrors() const;
  bool hasLeaks() const;
};

SanitizerReport parseSanitizerLog(std::string_view log);

/// An operation of the sequence: its place and its kind ("ctx_destroy").
struct OpPlace {
  At at;
  std::string op;
};

/// The outcome of `supervised` in the light of `report`, read after the child ended with
/// `exitCode`; `destroyAt` is the sequence's first context-destroying operation, where leaks the
/// runner did not see at its end are placed (end when there is none). The report's text is
/// appended to the output the finding keeps. Clears the harness error
/// that compute-sanitizer's error exit status alone causes; sets one when that status comes with
/// a report naming no error.
void applySanitizerReport(const SanitizerReport& report, const std::optional<OpPlace>& destroyAt,
                          Supervised& supervised);

/// The sanitizer a run is under: which tool, and where compute-sanitizer is.
struct SanitizerSetup {
  SanitizerTool tool = SanitizerTool::None;
  std::string path;
};

/// supervise() of `command` under compute-sanitizer (always a fresh child), its report at `log`
/// read, applied (applySanitizerReport) and removed.
Supervised superviseUnderSanitizer(const ChildCommand& command, SupervisionLimits limits,
                                   const SanitizerSetup& sanitizer,
                                   const std::filesystem::path& log,
                                   const std::optional<OpPlace>& destroyAt);

}  // namespace gpufuzz
