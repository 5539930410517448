// Subcommands.h: the gpufuzz subcommands (docs/cli.md). Each returns the process exit status.
#pragma once

#include <filesystem>
#include <optional>

#include "harness/cli/Session.h"

namespace gpufuzz {

int runReplay(Session& session);
int runShrink(Session& session);
int runFuzz(Session& session);
int runExplain(Session& session);
int runPromote(Session& session);
int runMerge(Session& session);
int runPlot(Session& session);
int runReport(Session& session);
int runSweep(Session& session);
/// The page `gpufuzz report DIR` writes when no -o is given: DIR/report.html.
std::filesystem::path defaultHtmlReport(const std::filesystem::path& dir);
/// Writes the HTML report of the findings folder `dir` to `out` (ReportCommand.cpp); `quiet`
/// drops what the drawing script prints. Returns how many finding folders could not be read
/// (the page names them). InputError for bad input; std::runtime_error when the script failed.
std::size_t writeHtmlReport(const std::filesystem::path& dir, const std::filesystem::path& out,
                            bool quiet);
/// The same for a campaign or a merge, which a failed report must not fail: false, and a warning
/// printed, when it could not be written.
bool writeHtmlReportOrWarn(const std::filesystem::path& dir, const std::filesystem::path& out);
/// Where --html says the page goes: its FILE, nothing for `none`, `fallback` when not given.
std::optional<std::filesystem::path> htmlReportOption(
    const CommandLine& cl, const std::optional<std::filesystem::path>& fallback);
/// `gpufuzz model check FILE | show NAME`: needs no session (no runner, no device).
int runModel(const CommandLine& cl);

}  // namespace gpufuzz
