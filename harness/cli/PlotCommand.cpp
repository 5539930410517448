// PlotCommand.cpp: `gpufuzz plot DIR`: DIR/plot_data (campaign/PlotData.h) and the findings'
// records checked, then drawn by tools/plot-campaign (matplotlib) into DIR/plot.png and
// DIR/plot.svg, and each finding's timeline into DIR/plots/finding-ID.png and .svg.
#include <cstdio>
#include <filesystem>

#include "base/InputError.h"
#include "harness/campaign/FindingStore.h"
#include "harness/campaign/PlotData.h"
#include "harness/cli/Subcommands.h"
#include "harness/cli/ToolScript.h"

namespace gpufuzz {

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
  if (runToolScript("plot-campaign", {data.string(), (dir / "plot").string(), dir.string()},
                    false) != 0) {
    std::fprintf(stderr, "gpufuzz: %s failed (python3-matplotlib installed?)\n",
                 toolScript("plot-campaign").c_str());
    return 3;
  }
  return 0;
}

}  // namespace gpufuzz
