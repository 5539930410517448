// PlotDataTest.cpp: every campaign appends to <out>/plot_data (a line at its end, and one a
// minute while it runs), counting every campaign of the folder; `gpufuzz plot DIR` checks the
// file, saying where it is malformed (exit 2), and draws it as PNG and SVG.
#include <gtest/gtest.h>

#include "base/InputError.h"
#include "harness/base/AtomicFile.h"
#include "harness/campaign/PlotData.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

namespace fs = std::filesystem;

std::size_t column(const std::string& name) {
  const auto columns = plotDataColumns();
  return static_cast<std::size_t>(std::find(columns.begin(), columns.end(), name) -
                                  columns.begin());
}

TEST(PlotData, CampaignsAppendLinesThatCountTheWholeFolder) {
  testing::ScratchDir dir;
  const fs::path out = dir.path() / "findings";
  for (const char* seed : {"3", "4"}) {
    const auto r = testing::gpufuzz(testing::kQuickSimFuzz + " --faults none --runs 120 --seed " +
                                    seed + " --out " + out.string());
    ASSERT_EQ(r.status, 0) << r.output;
  }
  const std::string text = readFile(out / kPlotDataFile);
  EXPECT_EQ(text.find("# unix_time, run_time_s, executions, execs_per_sec, sequences, pass, hang"),
            text.find("# unix_time"));
  EXPECT_EQ(text.find("# unix_time"), text.rfind("# unix_time")) << text;  // one header
  const auto rows = readPlotData(out / kPlotDataFile);
  ASSERT_EQ(rows.size(), 2U) << text;
  EXPECT_EQ(rows[0][column("sequences")], 120);
  EXPECT_EQ(rows[1][column("sequences")], 240);
  EXPECT_EQ(rows[1][column("pass")], 240);
  EXPECT_GE(rows[1][column("executions")], 240);
  EXPECT_GT(rows[1][column("run_time_s")], rows[0][column("run_time_s")]);
  EXPECT_GT(rows[1][column("execs_per_sec")], 0);
  EXPECT_EQ(rows[1][column("unique_findings")], 0);

  const auto plot = testing::gpufuzz("plot " + out.string());
  ASSERT_EQ(plot.status, 0) << plot.output;
  EXPECT_EQ(readFile(out / "plot.png").substr(0, 8), "\x89PNG\r\n\x1a\n");
  EXPECT_NE(readFile(out / "plot.svg").find("<svg"), std::string::npos);
}

TEST(PlotData, FindingsAndClassesAreCounted) {
  testing::ScratchDir dir;
  const fs::path out = dir.path() / "findings";
  const auto r = testing::gpufuzz(testing::kQuickSimFuzz +
                                  " --policy context-first --faults max-26.5.0 --runs 40 --seed 1"
                                  " --out " +
                                  out.string());
  ASSERT_EQ(r.status, 1) << r.output;
  const auto rows = readPlotData(out / kPlotDataFile);
  ASSERT_FALSE(rows.empty());
  EXPECT_GE(rows.back()[column("unique_findings")], 1);
  EXPECT_GE(rows.back()[column("hang")], 1);
  EXPECT_EQ(rows.back()[column("sequences")], 40);
}

TEST(PlotData, AMalformedFileIsRefusedWithItsPlace) {
  testing::ScratchDir dir;
  const fs::path file = dir.path() / kPlotDataFile;
  writeFileAtomically(file, "# a comment\n1, 2, x\n");
  try {
    readPlotData(file);
    FAIL() << "accepted a line that is not numbers";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string() + ":2:7: expected a number"),
              std::string::npos)
        << e.what();
  }
  writeFileAtomically(file, "1, 2, 3\n");
  EXPECT_THROW(readPlotData(file), InputError);  // too few columns

  const auto bad = testing::gpufuzz("plot " + dir.path().string());
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find(file.string() + ":1:1: 3 columns, expected"), std::string::npos)
      << bad.output;
  EXPECT_FALSE(fs::exists(dir.path() / "plot.png"));
  const auto missing = testing::gpufuzz("plot " + (dir.path() / "none").string());
  EXPECT_EQ(missing.status, 2) << missing.output;
}

}  // namespace
}  // namespace gpufuzz
