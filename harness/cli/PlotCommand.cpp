// PlotCommand.cpp: `gpufuzz plot DIR`: DIR/plot_data (campaign/PlotData.h) and the findings'
// records checked, then drawn by tools/plot-campaign (matplotlib) into DIR/plot.png and
// DIR/plot.svg, and each finding's timeline into DIR/plots/finding-ID.png and .svg.
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>

#include "harness/campaign/FindingStore.h"
#include "harness/campaign/PlotData.h"
#include "harness/cli/Subcommands.h"
#include "harness/search/Trial.h"
#include "renderer/InputError.h"
#include "renderer/device/DeviceError.h"

extern char** environ;

namespace gpufuzz {

namespace {

/// The drawing script: beside the executable (copied there by the build), else in the source
/// tree it was built from.
std::filesystem::path plotScript() {
  const auto beside = executableDir() / "plot-campaign";
  if (std::filesystem::exists(beside)) return beside;
  return std::filesystem::path(GPUFUZZ_TOOLS_DIR) / "plot-campaign";
}

}  // namespace

int runPlot(Session& session) {
  const std::filesystem::path dir = session.commandLine().files.front();
  if (!std::filesystem::is_directory(dir)) {
    throw InputError(dir.string() + ": not a findings folder (no such directory)");
  }
  const auto data = dir / kPlotDataFile;
  // Bad input is said here, with its place, before the script runs.
  if (readPlotData(data).empty()) {
    throw InputError(data.string() +
                     ": no data lines yet (a line comes a minute into a "
                     "campaign, and one at its end)");
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_directory()) readStoredFinding(entry.path());  // a malformed record: InputError
  }
  const std::string script = plotScript().string();
  const std::string source = data.string();
  const std::string prefix = (dir / "plot").string();
  const std::string findings = dir.string();
  const char* argv[] = {script.c_str(), source.c_str(), prefix.c_str(), findings.c_str(), nullptr};
  pid_t pid = 0;
  if (::posix_spawn(&pid, script.c_str(), nullptr, nullptr, const_cast<char* const*>(argv),
                    environ) != 0) {
    throw DeviceUnavailable("cannot run " + script + " (python3 with matplotlib draws the plot)");
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "gpufuzz: %s failed (python3-matplotlib installed?)\n", script.c_str());
    return 3;
  }
  return 0;
}

}  // namespace gpufuzz
