// FindingTimelineTest.cpp: each finding's finding.json keeps the timeline of its minimal
// sequence's confirmation run (every completed operation's latency and deadline, the stuck one
// with its deadline and how long it was watched), and `gpufuzz plot DIR` draws it for every
// finding as DIR/plots/finding-ID.png and .svg; a malformed record is refused with its name.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "harness/base/AtomicFile.h"
#include "harness/base/Json.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

namespace fs = std::filesystem;

/// The seed's hang, found and shrunk to `create r0; destroy r0; create r1` (stuck at 3).
const std::string kSeedHang = " --policy context-first --faults max-26.5.0 --runs 20 --seed 1";

double number(const boost::json::object& o, std::string_view key) {
  return o.at(key).to_number<double>();
}

TEST(FindingTimeline, AHangKeepsEachOperationsLatencyAndTheStuckOneAgainstItsDeadline) {
  testing::ScratchDir dir;
  const fs::path out = dir.path() / "findings";
  const auto r = testing::gpufuzz(testing::kQuickSimFuzz + kSeedHang + " --out " + out.string());
  ASSERT_EQ(r.status, 1) << r.output;
  const fs::path record = out / testing::seedHangId() / "finding.json";
  ASSERT_TRUE(fs::exists(record)) << r.output;
  const boost::json::object finding = readJsonFile(record.string()).as_object();
  ASSERT_TRUE(finding.at("timeline").is_object()) << readFile(record);
  const boost::json::object& timeline = finding.at("timeline").as_object();

  // The two operations before the stuck one completed, in order, well inside their deadline.
  const boost::json::array& ops = timeline.at("operations").as_array();
  ASSERT_EQ(ops.size(), 2U) << readFile(record);
  const char* kinds[] = {"create", "destroy"};
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const boost::json::object& op = ops[i].as_object();
    EXPECT_EQ(op.at("at").to_number<uint64_t>(), i + 1);
    EXPECT_EQ(op.at("op").as_string(), kinds[i]);
    EXPECT_GE(number(op, "elapsed_ms"), 0.0);
    EXPECT_GE(number(op, "deadline_ms"), 150.0);  // --deadline 150, or its confirmation's
    EXPECT_LT(number(op, "elapsed_ms"), number(op, "deadline_ms"));
  }
  // The third, stuck: watched at least its deadline, and not for much longer.
  const boost::json::object& stuck = timeline.at("stuck").as_object();
  EXPECT_EQ(stuck.at("at").to_number<uint64_t>(), 3U);
  EXPECT_EQ(stuck.at("op").as_string(), "create");
  EXPECT_EQ(stuck.at("at"), finding.at("at"));
  const double deadline = number(stuck, "deadline_ms");
  EXPECT_GE(deadline, 150.0);
  EXPECT_GE(number(stuck, "watched_ms"), deadline * 0.99);
  EXPECT_LT(number(stuck, "watched_ms"), deadline * 2 + 1000) << readFile(record);

  const auto plot = testing::gpufuzz("plot " + out.string());
  ASSERT_EQ(plot.status, 0) << plot.output;
  const fs::path drawn = out / "plots" / ("finding-" + testing::seedHangId());
  EXPECT_EQ(readFile(drawn.string() + ".png").substr(0, 8), "\x89PNG\r\n\x1a\n");
  const std::string svg = readFile(drawn.string() + ".svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("watched"), std::string::npos) << "the stuck operation is not marked";

  // A record that is not JSON is bad input: named, exit 2, nothing drawn.
  fs::remove_all(out / "plots");
  writeFileAtomically(record, "{\"class\": ");
  const auto bad = testing::gpufuzz("plot " + out.string());
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find(record.string()), std::string::npos) << bad.output;
  EXPECT_FALSE(fs::exists(out / "plots"));
}

}  // namespace
}  // namespace gpufuzz
