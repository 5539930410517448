// PlotData.h: <out>/plot_data, a campaign's history in the spirit of AFL's plot_data: a line a
// minute while it runs and one when it ends, appended, so a folder where campaigns ran again
// holds all of them. Comma-separated, with `#` comment lines at the top naming the columns:
//   unix_time, run_time_s, executions, execs_per_sec, sequences, <one column per outcome
//   class: pass, hang, ...>, unique_findings, signals
// run_time_s, executions, sequences and the classes count every campaign run in the folder (as
// stats.json's `cumulative`); execs_per_sec is the rate since the line before; unique_findings
// the findings in the folder; signals the distinct signals, under either search.
// `gpufuzz plot DIR` draws it (tools/plot-campaign).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/campaign/StatsFile.h"

namespace gpufuzz {

inline constexpr const char* kPlotDataFile = "plot_data";

/// The column names, in order.
std::vector<std::string> plotDataColumns();

/// One line (without its newline) for these stats, at `rate` executions a second.
std::string plotDataLine(const CampaignStats& stats, double rate);

/// Appends a line to `path`, writing the header first when the file is new or empty.
void appendPlotData(const std::filesystem::path& path, const CampaignStats& stats, double rate);

/// The rows of a plot_data file (numbers, in column order); InputError with FILE:LINE:COLUMN for
/// a line that is not one.
std::vector<std::vector<double>> readPlotData(const std::filesystem::path& path);

}  // namespace gpufuzz
