// PlotData.cpp: plot_data lines written, appended and read back.
#include "harness/campaign/PlotData.h"

#include <charconv>
#include <cstdio>
#include <fstream>

#include "base/InputError.h"
#include "harness/base/AtomicFile.h"

namespace gpufuzz {

std::vector<std::string> plotDataColumns() {
  std::vector<std::string> columns{"unix_time", "run_time_s", "executions", "execs_per_sec",
                                   "sequences"};
  for (std::size_t c = 0; c < kOutcomeClassCount; ++c)
    columns.emplace_back(outcomeClassName(static_cast<OutcomeClass>(c)));
  columns.emplace_back("unique_findings");
  columns.emplace_back("signals");
  return columns;
}

std::string plotDataLine(const CampaignStats& s, double rate) {
  char head[160];
  std::snprintf(head, sizeof head, "%lld, %.1f, %llu, %.2f, %llu",
                static_cast<long long>(s.lastUpdate), s.cumulative.runTimeSeconds,
                static_cast<unsigned long long>(s.cumulative.executions), rate,
                static_cast<unsigned long long>(s.cumulative.sequences));
  std::string line = head;
  for (const uint64_t n : s.cumulative.byClass)
    line += ", " + std::to_string(n);
  return line + ", " + std::to_string(s.uniqueFindings) + ", " + std::to_string(s.signals);
}

void appendPlotData(const std::filesystem::path& path, const CampaignStats& stats, double rate) {
  std::error_code ec;
  const bool fresh =
      !std::filesystem::exists(path, ec) || std::filesystem::file_size(path, ec) == 0;
  std::string text;
  if (fresh) {
    text = "# gpufuzz plot_data: a line a minute and at the end of each campaign run\n# ";
    const auto columns = plotDataColumns();
    for (std::size_t i = 0; i < columns.size(); ++i)
      text += (i ? ", " : "") + columns[i];
    text += "\n";
  }
  // Whole lines or none: a full disk leaves no line half-written for readPlotData to refuse.
  appendFileWhole(path, text + plotDataLine(stats, rate) + "\n");
}

std::vector<std::vector<double>> readPlotData(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot read it (no campaign ran in this folder?)");
  const std::size_t width = plotDataColumns().size();
  std::vector<std::vector<double>> rows;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line.front() == '#') continue;
    std::vector<double> row;
    std::size_t at = 0;
    while (at <= line.size()) {
      const std::size_t start = line.find_first_not_of(' ', at);
      const char* begin = line.data() + (start == std::string::npos ? line.size() : start);
      double value = 0;
      const auto [end, error] = std::from_chars(begin, line.data() + line.size(), value);
      const auto column = static_cast<std::size_t>(begin - line.data()) + 1;
      const std::string place =
          path.string() + ":" + std::to_string(number) + ":" + std::to_string(column) + ": ";
      if (error != std::errc()) throw InputError(place + "expected a number");
      row.push_back(value);
      at = static_cast<std::size_t>(end - line.data());
      if (at == line.size()) break;
      if (line[at] != ',') {
        throw InputError(path.string() + ":" + std::to_string(number) + ":" +
                         std::to_string(at + 1) + ": expected ',' after the number");
      }
      ++at;
    }
    // A folder's lines from before the signals column: no signals were counted then.
    if (row.size() + 1 == width) row.push_back(0);
    if (row.size() != width) {
      throw InputError(path.string() + ":" + std::to_string(number) + ":1: " +
                       std::to_string(row.size()) + " columns, expected " + std::to_string(width));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace gpufuzz
