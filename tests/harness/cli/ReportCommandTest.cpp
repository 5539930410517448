// ReportCommandTest.cpp: gpufuzz report: one self-contained page of a findings folder, written
// atomically; bad input refused with its place (exit 2); a half-written or damaged finding named
// on the page while the rest are shown; big outputs cut with a link to the file; merge writes
// the merged folder's page. tests/report opens such pages in Chromium.
#include <gtest/gtest.h>

#include "harness/base/AtomicFile.h"
#include "harness/campaign/StatsFile.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

namespace fs = std::filesystem;

/// `text` as the page writes it (HTML-escaped).
std::string escaped(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#x27;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Finding hang() {
  Finding f = testing::simFinding("create a\ndestroy a\ncreate b\n", OutcomeClass::Hang, 3,
                                  "create", "context-first", "max-26.5.0");
  f.foundAt = "2026-01-01T10:00:00Z";
  f.hits = 3;
  return f;
}

Finding error() {
  Finding f = testing::simFinding("create a\nset_textures a\nset_textures a\n", OutcomeClass::Error,
                                  3, "set_textures", "no-texture-wait", "strict-lifetimes");
  f.foundAt = "2026-01-01T11:00:00Z";
  return f;
}

CampaignStats stats() {
  CampaignStats s;
  s.seed = 7;
  s.backend = "sim";
  s.commandLine = "gpufuzz fuzz --seed 7 --runs 40";
  s.run.campaigns = 1;
  s.run.executions = 100;
  s.run.sequences = 40;
  s.run.byClass[static_cast<std::size_t>(OutcomeClass::Hang)] = 3;
  s.run.byClass[static_cast<std::size_t>(OutcomeClass::Pass)] = 36;
  s.run.byClass[static_cast<std::size_t>(OutcomeClass::Error)] = 1;
  s.cumulative = s.run;
  s.uniqueFindings = 2;
  s.finished = true;
  return s;
}

struct Folder {
  testing::ScratchDir dir;
  fs::path out = dir.path() / "findings";
  fs::path hangDir, errorDir;
  Folder() {
    FindingStore store(out);
    hangDir = store.record(hang()).second;
    errorDir = store.record(error()).second;
    writeStats(out / kStatsFile, stats());
  }
};

std::vector<std::string> namesIn(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  return names;
}

TEST(Report, ThePageShowsEveryFindingAndIsWrittenAtomically) {
  Folder f;
  const auto before = namesIn(f.out);
  const auto r = testing::gpufuzz("report " + f.out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string page = readFile(f.out / "report.html");
  EXPECT_TRUE(page.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(page.find("</html>"), std::string::npos);
  for (const Finding& finding : {hang(), error()}) {
    EXPECT_NE(page.find(escaped(finding.id())), std::string::npos) << finding.id();
    EXPECT_NE(page.find(escaped(causeKey(finding))), std::string::npos) << finding.id();
    std::string ops = normalizedOperations(finding.minimal);
    ops.pop_back();  // the last newline
    EXPECT_NE(page.find("<pre>" + escaped(ops) + "</pre>"), std::string::npos) << finding.id();
  }
  EXPECT_NE(page.find("gpufuzz fuzz --seed 7 --runs 40"), std::string::npos);
  EXPECT_NE(page.find("2 cause(s), 4 hit(s)"), std::string::npos);
  // Nothing is fetched: no address but data: URIs and links to the folder's own files.
  EXPECT_EQ(page.find("http"), std::string::npos);
  EXPECT_EQ(page.find("src=\"/"), std::string::npos);
  // Only the page was added: the script's index and its temporary file are gone.
  auto after = namesIn(f.out);
  std::erase(after, "report.html");
  std::sort(after.begin(), after.end());
  auto expected = before;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(after, expected);
}

// A leak is seen once everything was released: it has no operation, and the page says `end`
// where it once wrote Python's "None ()".
TEST(Report, ALeakIsAtTheEnd) {
  testing::ScratchDir dir;
  const fs::path out = dir.path() / "findings";
  Finding leak =
      testing::simFinding("create a\ndestroy a\n", OutcomeClass::Leak, 2, "destroy", "shipped", "");
  leak.outcome.at.reset();
  leak.outcome.op.clear();
  FindingStore(out).record(leak);
  const auto r = testing::gpufuzz("report " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string page = readFile(out / "report.html");
  EXPECT_EQ(page.find("None"), std::string::npos);
  EXPECT_NE(page.find("<td>end</td>"), std::string::npos);
  EXPECT_NE(page.find("</span> at end</h3>"), std::string::npos);
}

TEST(Report, ThePageElsewhereLinksBackToTheFolder) {
  Folder f;
  fs::create_directories(f.dir.path() / "pages");
  const fs::path page = f.dir.path() / "pages" / "night.html";
  const auto r = testing::gpufuzz("report " + f.out.string() + " -o " + page.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(fs::exists(f.out / "report.html"));
  const std::string text = readFile(page);
  const std::string id = f.hangDir.filename().string();
  EXPECT_NE(text.find("href=\"../findings/" + id + "/\""), std::string::npos) << text;
  EXPECT_NE(text.find("gpufuzz replay ../findings/" + id + "/minimal.seq"), std::string::npos);
}

TEST(Report, BadInputIsRefusedWithItsPlace) {
  Folder f;
  const auto missing = testing::gpufuzz("report " + (f.dir.path() / "none").string());
  EXPECT_EQ(missing.status, 2) << missing.output;
  EXPECT_NE(missing.output.find("none: not a campaign folder (no such directory)"),
            std::string::npos)
      << missing.output;

  fs::create_directories(f.dir.path() / "empty" / "notes");
  const auto empty = testing::gpufuzz("report " + (f.dir.path() / "empty").string());
  EXPECT_EQ(empty.status, 2) << empty.output;
  EXPECT_NE(empty.output.find("empty: not a campaign folder (no stats.json, plot_data or finding"),
            std::string::npos)
      << empty.output;
  EXPECT_FALSE(fs::exists(f.dir.path() / "empty" / "report.html"));

  writeFileAtomically(f.out / kStatsFile, "{\"executions\": 12,\n  \"seed\": ");
  const auto stats = testing::gpufuzz("report " + f.out.string());
  EXPECT_EQ(stats.status, 2) << stats.output;
  EXPECT_NE(stats.output.find((f.out / kStatsFile).string() + ":"), std::string::npos)
      << stats.output;
  EXPECT_FALSE(fs::exists(f.out / "report.html"));

  writeStats(f.out / kStatsFile, ::gpufuzz::stats());
  writeFileAtomically(f.out / "plot_data", "# unix_time, run_time_s\n1, 2, x\n");
  const auto plot = testing::gpufuzz("report " + f.out.string());
  EXPECT_EQ(plot.status, 2) << plot.output;
  EXPECT_NE(plot.output.find((f.out / "plot_data").string() + ":2:7: expected a number"),
            std::string::npos)
      << plot.output;
  EXPECT_FALSE(fs::exists(f.out / "report.html"));

  const auto options = testing::gpufuzz("report " + f.out.string() + " --seed 1");
  EXPECT_EQ(options.status, 2) << options.output;
}

TEST(Report, AHalfWrittenFindingIsNamedAndTheRestShown) {
  Folder f;
  // A finding cut short before its record and signature were written, and one whose record was
  // cut mid-way (written in place by another tool, or a disk that filled up).
  const fs::path half = f.out / "crash-draw-0badc0";
  fs::create_directories(half);
  writeFileAtomically(half / "minimal.seq", "create a\ndraw a\n");
  const fs::path cut = f.out / "error-sync-c0ffee";
  fs::copy(f.errorDir, cut);
  const std::string record = readFile(cut / "finding.json");
  writeFileAtomically(cut / "finding.json", record.substr(0, record.size() / 2));
  const auto r = testing::gpufuzz("report " + f.out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("2 finding folder(s) could not be read"), std::string::npos) << r.output;
  const std::string page = readFile(f.out / "report.html");
  EXPECT_NE(page.find("<b>crash-draw-0badc0</b>: half-written: it lacks signature, finding.json"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("<b>error-sync-c0ffee</b>: " + escaped((cut / "finding.json").string())),
            std::string::npos);
  for (const Finding& finding : {hang(), error()})
    EXPECT_NE(page.find(escaped(causeKey(finding))), std::string::npos) << finding.id();
}

TEST(Report, BigOutputsAreCutWithALinkToTheFile) {
  Folder f;
  std::string output;
  for (int i = 0; output.size() < 200'000; ++i)
    output += "line " + std::to_string(i) + " of a long output tail\n";
  writeFileAtomically(f.hangDir / "output.txt", output);
  const auto r = testing::gpufuzz("report " + f.out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string page = readFile(f.out / "report.html");
  const std::string id = f.hangDir.filename().string();
  EXPECT_NE(page.find("line 59 of a long output tail"), std::string::npos);
  EXPECT_EQ(page.find("line 60 of a long output tail"), std::string::npos);
  EXPECT_NE(page.find("the whole file: <a href=\"" + id + "/output.txt\">"), std::string::npos);
  EXPECT_LT(page.size(), 100'000U);
}

TEST(Report, MergeWritesThePageOfTheMergedFolder) {
  testing::ScratchDir dir;
  const fs::path a = dir.path() / "shard0", b = dir.path() / "shard1", out = dir.path() / "all";
  FindingStore(a).record(hang());
  writeStats(a / kStatsFile, stats());
  FindingStore(b).record(error());
  writeStats(b / kStatsFile, stats());
  const auto r =
      testing::gpufuzz("merge " + a.string() + " " + b.string() + " --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("report: " + (out / "report.html").string()), std::string::npos)
      << r.output;
  const std::string page = readFile(out / "report.html");
  EXPECT_NE(page.find("Shards: who found what"), std::string::npos);
  EXPECT_NE(page.find(">shard0</span> (3)"), std::string::npos) << "the hang's hits, by shard";
  EXPECT_NE(page.find(">shard1</span> (1)"), std::string::npos);

  const auto none = testing::gpufuzz("merge " + a.string() + " --out " +
                                     (dir.path() / "quiet").string() + " --html none");
  ASSERT_EQ(none.status, 0) << none.output;
  EXPECT_FALSE(fs::exists(dir.path() / "quiet" / "report.html"));
}

TEST(Report, AFailedPageNeverFailsTheMerge) {
  testing::ScratchDir dir;
  const fs::path a = dir.path() / "shard0";
  const std::string id = FindingStore(a).record(hang()).second.filename().string();
  const auto r =
      testing::gpufuzz("merge " + a.string() + " --out " + (dir.path() / "all").string() +
                       " --html " + (dir.path() / "no" / "such" / "page.html").string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("warning: the HTML report"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(dir.path() / "all" / id / "signature")) << "the merge was done";
}

TEST(Report, WithoutMatplotlibThePageIsWholeButForItsPictures) {
  testing::ScratchDir dir;
  const fs::path out = dir.path() / "night";
  const auto campaign = testing::gpufuzz(
      testing::kQuickSimFuzz +
      " --policy context-first --faults max-26.5.0 --runs 20 --seed 3 --out " + out.string());
  ASSERT_EQ(campaign.status, 1) << campaign.output;
  // A matplotlib that cannot be imported, as on a machine without python3-matplotlib.
  fs::create_directories(dir.path() / "bare" / "matplotlib");
  writeFileAtomically(dir.path() / "bare" / "matplotlib" / "__init__.py",
                      "raise ImportError('No module named matplotlib')\n");
  const auto bare =
      testing::runCommand("PYTHONPATH=" + (dir.path() / "bare").string() + " " +
                          (testing::binDir() / "gpufuzz").string() + " report " + out.string() +
                          " -o " + (dir.path() / "bare.html").string());
  ASSERT_EQ(bare.status, 0) << bare.output;
  const std::string page = readFile(dir.path() / "bare.html");
  EXPECT_NE(page.find("No picture here: drawing needs python3-matplotlib"), std::string::npos);
  EXPECT_EQ(page.find("data:image/png"), std::string::npos);
  for (const auto& entry : fs::directory_iterator(out)) {
    if (!fs::exists(entry.path() / "finding.json")) continue;
    EXPECT_NE(page.find(entry.path().filename().string()), std::string::npos) << entry.path();
  }
  // With matplotlib the same folder's page has its pictures.
  const auto drawn = testing::gpufuzz("report " + out.string());
  ASSERT_EQ(drawn.status, 0) << drawn.output;
  const std::string full = readFile(out / "report.html");
  EXPECT_NE(full.find("data:image/png"), std::string::npos);
  EXPECT_EQ(full.find("No picture here"), std::string::npos);
}

}  // namespace
}  // namespace gpufuzz
