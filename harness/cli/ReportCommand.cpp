// ReportCommand.cpp: `gpufuzz report DIR [-o FILE]`: the findings folder checked here, then drawn
// by tools/report-campaign into one self-contained HTML page (DIR/report.html by default).
// Bad input is exit 2 with its place: DIR is no folder, or holds no campaign's files; stats.json
// or plot_data is malformed. A finding folder that cannot be read (half-written, or damaged)
// is named on the page, and the rest are shown.
#include <unistd.h>

#include <cstdio>

#include "base/InputError.h"
#include "harness/base/AtomicFile.h"
#include "harness/base/Json.h"
#include "harness/campaign/FindingStore.h"
#include "harness/campaign/PlotData.h"
#include "harness/campaign/StatsFile.h"
#include "harness/cli/Subcommands.h"
#include "harness/cli/ToolScript.h"

namespace gpufuzz {

namespace {

namespace fs = std::filesystem;

/// What the page is drawn from, as checked here.
struct CheckedFolder {
  bool stats = false;
  bool plotData = false;
  std::vector<std::string> findings;                            // folder names
  std::vector<std::pair<std::string, std::string>> unreadable;  // folder name, why
};

/// Folders of a findings folder that are not findings: merged stats, drawn plots.
bool isFindingCandidate(const fs::directory_entry& entry) {
  const std::string name = entry.path().filename().string();
  return entry.is_directory() && !name.starts_with(".") && name != "merged" && name != "plots";
}

/// Why a folder with some of a finding's files is not one; empty when it holds none of them.
std::string missingFiles(const fs::path& dir) {
  std::vector<std::string> missing;
  for (const char* file : {"signature", "minimal.seq", "finding.json"}) {
    if (!fs::is_regular_file(dir / file)) missing.emplace_back(file);
  }
  if (missing.size() == 3) return "";
  if (missing.empty()) return "it changed while it was read";
  std::string list;
  for (const std::string& file : missing)
    list += (list.empty() ? "" : ", ") + file;
  return "half-written: it lacks " + list;
}

CheckedFolder checkFolder(const fs::path& dir) {
  if (!fs::is_directory(dir)) {
    throw InputError(dir.string() + ": not a campaign folder (no such directory)");
  }
  CheckedFolder checked;
  checked.stats = readStats(dir / kStatsFile).has_value();  // malformed: InputError, placed
  if (fs::exists(dir / kPlotDataFile)) {
    readPlotData(dir / kPlotDataFile);  // malformed: InputError with FILE:LINE:COLUMN
    checked.plotData = true;
  }
  std::vector<fs::path> folders;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (isFindingCandidate(entry)) folders.push_back(entry.path());
  }
  std::sort(folders.begin(), folders.end());
  for (const fs::path& folder : folders) {
    const std::string name = folder.filename().string();
    try {
      if (readStoredFinding(folder)) {
        checked.findings.push_back(name);
      } else if (const std::string why = missingFiles(folder); !why.empty()) {
        checked.unreadable.emplace_back(name, why);
      }
    } catch (const InputError& error) {
      checked.unreadable.emplace_back(name, error.what());
    }
  }
  if (!checked.stats && !checked.plotData && checked.findings.empty() &&
      checked.unreadable.empty()) {
    throw InputError(dir.string() +
                     ": not a campaign folder (no stats.json, plot_data or finding folders): give "
                     "the --out folder of gpufuzz fuzz or merge");
  }
  return checked;
}

std::string indexJson(const CheckedFolder& checked) {
  JsonWriter j;
  j.beginObject();
  j.key("stats").value(checked.stats);
  j.key("plot_data").value(checked.plotData);
  j.key("findings").beginArray();
  for (const std::string& name : checked.findings)
    j.value(name);
  j.endArray();
  j.key("unreadable").beginArray();
  for (const auto& [name, why] : checked.unreadable) {
    j.beginObject();
    j.key("id").value(name);
    j.key("why").value(why);
    j.endObject();
  }
  j.endArray();
  j.endObject();
  return j.str();
}

}  // namespace

fs::path defaultHtmlReport(const fs::path& dir) {
  return dir / "report.html";
}

std::size_t writeHtmlReport(const fs::path& dir, const fs::path& out, bool quiet) {
  const CheckedFolder checked = checkFolder(dir);
  const fs::path parent = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  if (!fs::is_directory(parent)) {
    throw InputError(out.string() + ": cannot write the report there (no folder " +
                     parent.string() + ")");
  }
  // What was checked goes to the script in a hidden file beside the page, removed once it is
  // written.
  const fs::path index =
      parent / ("." + out.filename().string() + ".index-" + std::to_string(::getpid()) + ".json");
  writeFileAtomically(index, indexJson(checked));
  int status = -1;
  try {
    status = runToolScript("report-campaign", {dir.string(), out.string(), index.string()}, quiet);
  } catch (...) {
    fs::remove(index);
    throw;
  }
  fs::remove(index);
  if (status != 0) {
    throw std::runtime_error(toolScript("report-campaign").string() + " failed (exit status " +
                             std::to_string(status) + ")");
  }
  return checked.unreadable.size();
}

bool writeHtmlReportOrWarn(const fs::path& dir, const fs::path& out) {
  try {
    writeHtmlReport(dir, out, true);
    return true;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gpufuzz: warning: the HTML report %s was not written: %s\n", out.c_str(),
                 error.what());
    return false;
  }
}

std::optional<fs::path> htmlReportOption(const CommandLine& cl,
                                         const std::optional<fs::path>& fallback) {
  const auto given = cl.value<Option::Html>();
  if (!given) return fallback;
  if (*given == "none") return std::nullopt;
  return fs::path(*given);
}

int runReport(Session& session) {
  const CommandLine& cl = session.commandLine();
  const fs::path dir = cl.files.front();
  const fs::path out = cl.value<Option::Output>().value_or(defaultHtmlReport(dir).string());
  try {
    const std::size_t unreadable = writeHtmlReport(dir, out, false);
    if (unreadable > 0) {
      std::fprintf(stderr,
                   "gpufuzz report: %zu finding folder(s) could not be read; the page "
                   "names them\n",
                   unreadable);
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& error) {
    std::fprintf(stderr, "gpufuzz: %s\n", error.what());
    return 3;
  }
  return 0;
}

}  // namespace gpufuzz
