// ComputeSanitizer.cpp: the compute-sanitizer command line and its text report.
#include "harness/supervise/ComputeSanitizer.h"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/InputError.h"
#include "harness/base/OutsideText.h"
#include "harness/supervise/CudaTools.h"

namespace gpufuzz {

namespace {

constexpr std::array<std::string_view, 5> kToolNames = {"none", "memcheck", "racecheck",
                                                        "synccheck", "initcheck"};
constexpr std::string_view kPrefix = "=========";

bool startsWith(std::string_view text, std::string_view start) {
  return text.substr(0, start.size()) == start;
}

/// The record lines compute-sanitizer frames but that report nothing by themselves, and its
/// notes on how the program exited ("Error: process didn't terminate successfully", with a hint
/// as its detail, when a signal ended it): the exit status says that, not an error in it.
bool isFrameLine(std::string_view line) {
  return line.empty() || startsWith(line, "COMPUTE-SANITIZER") ||
         startsWith(line, "LEAK SUMMARY:") || startsWith(line, "ERROR SUMMARY:") ||
         startsWith(line, "RACECHECK SUMMARY:") ||
         startsWith(line, "Target application returned an error") ||
         startsWith(line, "Error: process didn't terminate successfully");
}

}  // namespace

SanitizerTool parseSanitizerOption(const std::string& text) {
  for (std::size_t i = 0; i < kToolNames.size(); ++i) {
    if (text == kToolNames[i]) return static_cast<SanitizerTool>(i);
  }
  throw InputError("--sanitizer: '" + text +
                   "' is not one of none, memcheck, racecheck, synccheck, initcheck");
}

std::string_view sanitizerToolName(SanitizerTool tool) {
  return kToolNames[static_cast<std::size_t>(tool)];
}

std::optional<std::string> findComputeSanitizer() {
  if (const char* chosen = std::getenv("GPUFUZZ_COMPUTE_SANITIZER"); chosen != nullptr) {
    if (isExecutable(chosen)) return std::string(chosen);
    return std::nullopt;
  }
  if (std::optional<std::string> found = findCudaTool("compute-sanitizer")) return found;
  const std::string own = "/usr/local/cuda/compute-sanitizer/compute-sanitizer";
  if (isExecutable(own)) return own;
  return std::nullopt;
}

ChildCommand underSanitizer(const ChildCommand& command, SanitizerTool tool,
                            const std::string& sanitizer, const std::filesystem::path& log) {
  ChildCommand wrapped;
  wrapped.executable = sanitizer;
  wrapped.args = {"--tool", std::string(sanitizerToolName(tool))};
  if (tool == SanitizerTool::Memcheck)
    wrapped.args.insert(wrapped.args.end(), {"--leak-check", "full"});
  wrapped.args.insert(wrapped.args.end(),
                      {"--error-exitcode", std::to_string(kSanitizerErrorExit), "--log-file",
                       log.string(), "--print-limit", "100", command.executable});
  wrapped.args.insert(wrapped.args.end(), command.args.begin(), command.args.end());
  return wrapped;
}

bool SanitizerReport::hasErrors() const {
  for (const SanitizerRecord& r : records) {
    if (r.kind == SanitizerRecord::Kind::Error) return true;
  }
  return false;
}

bool SanitizerReport::hasLeaks() const {
  for (const SanitizerRecord& r : records) {
    if (r.kind == SanitizerRecord::Kind::Leak) return true;
  }
  return false;
}

SanitizerReport parseSanitizerLog(std::string_view log) {
  SanitizerReport report;
  SanitizerRecord* open = nullptr;
  while (!log.empty()) {
    const auto newline = log.find('\n');
    std::string_view line = log.substr(0, newline);
    log = newline == std::string_view::npos ? std::string_view() : log.substr(newline + 1);
    if (!startsWith(line, kPrefix)) {
      open = nullptr;  // the program's own output, when the log is shared with it
      continue;
    }
    line.remove_prefix(kPrefix.size());
    if (startsWith(line, " ")) line.remove_prefix(1);
    const bool detail = startsWith(line, " ");
    if (detail) {
      if (open != nullptr) open->text += "\n" + std::string(line);
      continue;
    }
    if (startsWith(line, "ERROR SUMMARY:")) {
      report.errorSummary = static_cast<unsigned>(
          std::strtoul(std::string(line.substr(std::string_view("ERROR SUMMARY:").size())).c_str(),
                       nullptr, 10));
    }
    if (isFrameLine(line)) {
      open = nullptr;
      continue;
    }
    SanitizerRecord record;
    record.kind =
        startsWith(line, "Leaked ") ? SanitizerRecord::Kind::Leak : SanitizerRecord::Kind::Error;
    record.headline = std::string(line);
    record.text = record.headline;
    report.records.push_back(std::move(record));
    open = &report.records.back();
  }
  return report;
}

void applySanitizerReport(const SanitizerReport& report, const std::optional<OpPlace>& destroyAt,
                          Supervised& supervised) {
  const bool sanitizerExit = supervised.exitCode == kSanitizerErrorExit;
  if (sanitizerExit) supervised.harnessError.reset();
  const auto first = [&](SanitizerRecord::Kind kind) -> const SanitizerRecord* {
    for (const SanitizerRecord& r : report.records) {
      if (r.kind == kind) return &r;
    }
    return nullptr;
  };
  RunOutcome& outcome = supervised.outcome;
  if (const SanitizerRecord* error = first(SanitizerRecord::Kind::Error)) {
    // The runner's own failure keeps its place (the operation whose call the driver refused);
    // a run that otherwise passed is invalid at its end.
    if (!outcome.at) {
      outcome.at = At{At::kEnd};
      outcome.op = kEndOperation;
    }
    outcome.cls = OutcomeClass::Invalid;
    outcome.detail = "compute-sanitizer: " + error->headline;
    outcome.fault.clear();  // the checker's finding, not a planted one
    return;
  }
  if (const SanitizerRecord* leak = first(SanitizerRecord::Kind::Leak)) {
    if (outcome.cls == OutcomeClass::Leak) {
      outcome.detail += " (compute-sanitizer: " + leak->headline + ")";
      return;
    }
    outcome.cls = OutcomeClass::Invalid;
    outcome.at = destroyAt ? destroyAt->at : At{At::kEnd};
    outcome.op = destroyAt ? destroyAt->op : std::string(kEndOperation);
    outcome.detail =
        "compute-sanitizer: allocations alive at a context's destroy: " + leak->headline;
    outcome.fault.clear();
    return;
  }
  if (sanitizerExit) {
    supervised.harnessError = "compute-sanitizer exited with its error status (" +
                              std::to_string(kSanitizerErrorExit) + ") but its log names no error";
  }
}

Supervised superviseUnderSanitizer(const ChildCommand& command, SupervisionLimits limits,
                                   const SanitizerSetup& sanitizer,
                                   const std::filesystem::path& log,
                                   const std::optional<OpPlace>& destroyAt) {
  limits.forkServer = false;
  limits.signalAsExitStatus = true;
  std::error_code ignored;
  std::filesystem::remove(log, ignored);
  Supervised supervised =
      supervise(underSanitizer(command, sanitizer.tool, sanitizer.path, log), limits);
  std::ostringstream raw;
  if (std::ifstream in(log); in) raw << in.rdbuf();
  std::filesystem::remove(log, ignored);
  if (supervised.stuck) return supervised;  // a hang or spin stays one; the report is partial
  // Its report quotes the program's kernel names and messages: outside text.
  const std::string text = outsideText(raw.str());
  applySanitizerReport(parseSanitizerLog(text), destroyAt, supervised);
  if (!text.empty()) {
    supervised.outputTail += "\n--- compute-sanitizer " +
                             std::string(sanitizerToolName(sanitizer.tool)) + " report ---\n" +
                             text;
  }
  return supervised;
}

}  // namespace gpufuzz
