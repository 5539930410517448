// ToolScript.h: the Python tools gpufuzz runs to draw (tools/plot-campaign, tools/report-campaign,
// with their module campaign_plots.py). A tool is found beside the executable (copied there by
// the build), else in the source tree the executable was built from. It runs as a child
// process with no descriptor of gpufuzz's but the standard ones, and is waited for.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gpufuzz {

/// The tool's file: beside the executable, else under the source tree's tools/.
std::filesystem::path toolScript(const std::string& name);

/// Runs the tool with `args` and waits for it; `quiet` drops what it prints. Returns its exit
/// status, or -1 when it did not exit normally.
/// DeviceUnavailable when it cannot be started.
int runToolScript(const std::string& name, const std::vector<std::string>& args, bool quiet);

}  // namespace gpufuzz
