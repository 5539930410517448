// ExecutorKitTest.cpp: the parts model executors share (renderer/device/ExecutorKit.h): names of a
// kind, the table of operations, releases by default or override, and the check of a table
// against its model, which must fail in each direction of disagreement.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "renderer/device/ExecutorKit.h"

namespace gpufuzz {
namespace {

/// An executor of a model with kinds `box` (released by default by box_end) and `tag` (by an
/// override): it records each call.
class Recorder {
 public:
  void make(const ModelCall& c) { calls.push_back("make " + c.names[0]); }
  void end(const ModelCall& c) {
    calls.push_back("end " + c.names[0] + " at " + std::to_string(c.ordinal) + " size " +
                    std::to_string(c.arg("size")) + " mode " + std::string(c.word("mode")));
  }
  void dropTag(const std::string& name) { calls.push_back("drop " + name); }

  static const kit::OpTable<Recorder>& table() {
    static const kit::OpTable<Recorder> ops{
        "recorder",
        "toy",
        {{"box_make", &Recorder::make}, {"box_end", &Recorder::end}},
        {{"tag", &Recorder::dropTag}}};
    return ops;
  }

  std::vector<std::string> calls;
};

TEST(ExecutorKit, AKindKeepsNamesInNameAndCreationOrder) {
  kit::Kind<int> boxes{"recorder", "box"};
  boxes.add("b1", 1);
  boxes.add("b0", 0);
  int& held = boxes.named("b1");
  boxes.add("b2", 2);
  EXPECT_EQ(&held, &boxes.named("b1"));  // other names leave a reference alone
  EXPECT_EQ(boxes.inCreationOrder(), (std::vector<std::string>{"b1", "b0", "b2"}));
  std::vector<std::string> byName;
  for (const auto& [name, value] : boxes)
    byName.push_back(name);
  EXPECT_EQ(byName, (std::vector<std::string>{"b0", "b1", "b2"}));
  EXPECT_EQ(boxes.take("b0"), 0);
  EXPECT_EQ(boxes.find("b0"), nullptr);
  EXPECT_EQ(boxes.inCreationOrder(), (std::vector<std::string>{"b1", "b2"}));
  try {
    boxes.named("b0");
    ADD_FAILURE() << "no error for a name not live";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "recorder: no live box named b0");
  }
  EXPECT_THROW(boxes.take("b9"), std::logic_error);
}

TEST(ExecutorKit, ATableRunsHandlersAndReleasesByDefaultOrOverride) {
  Recorder recorder;
  const std::string names[] = {"b0"};
  Recorder::table().run(recorder, ModelCall{"box_make", names, {}, 1});
  try {
    Recorder::table().run(recorder, ModelCall{"box_paint", names, {}, 2});
    ADD_FAILURE() << "no error for an operation without a handler";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "recorder: model toy's operation box_paint has no handler");
  }
  kit::DefaultReleases defaults;
  const std::vector<DefaultRelease> told = {
      {"box", "box_end", {{"size", 4, ""}, {"mode", 1, "fast"}}}};
  defaults.set(told);
  Recorder::table().release(recorder, defaults, "box", "b0");
  Recorder::table().release(recorder, defaults, "tag", "t0");
  EXPECT_THROW(Recorder::table().release(recorder, defaults, "lid", "l0"), std::logic_error);
  EXPECT_EQ(recorder.calls,
            (std::vector<std::string>{"make b0", "end b0 at 0 size 4 mode fast", "drop t0"}));
}

TEST(ExecutorKit, TheCheckFindsEachDisagreement) {
  const kit::ModelOutline toy{"toy", {"box_make", "box_end"}, {"box", "tag"}, {"box"}};
  EXPECT_TRUE(kit::tableDisagreements(Recorder::table().shape(), toy).empty());

  kit::TableShape missing = Recorder::table().shape();
  missing.operations.pop_back();
  EXPECT_EQ(kit::tableDisagreements(missing, toy),
            std::vector<std::string>{
                "model toy's operation box_end has no handler in the toy executor's table"});

  kit::TableShape extra = Recorder::table().shape();
  extra.operations.push_back("box_paint");
  EXPECT_EQ(kit::tableDisagreements(extra, toy),
            std::vector<std::string>{
                "the toy executor's table has a handler for box_paint, which model toy lacks"});

  kit::TableShape twice = Recorder::table().shape();
  twice.operations.push_back("box_make");
  EXPECT_EQ(
      kit::tableDisagreements(twice, toy),
      std::vector<std::string>{"the toy executor's table has 2 handlers for operation box_make"});

  kit::TableShape unreleased = Recorder::table().shape();
  unreleased.overrides = {"lid"};
  EXPECT_EQ(kit::tableDisagreements(unreleased, toy),
            (std::vector<std::string>{
                "model toy's kind tag has no default release and the toy executor's table no "
                "override for it",
                "the toy executor's table overrides the release of lid, which model toy lacks"}));
}

TEST(ExecutorKit, TheLatchTripsOnAFailedCallAndTheReportJoinsFindings) {
  kit::FailureLatch latch;
  EXPECT_EQ(latch.guard([] { return 7; }), 7);
  EXPECT_FALSE(latch.tripped());
  EXPECT_THROW(latch.guard([]() -> int { throw std::runtime_error("failed"); }),
               std::runtime_error);
  EXPECT_TRUE(latch.tripped());

  kit::LeakReport report;
  EXPECT_TRUE(report.empty());
  EXPECT_EQ(report.text(), "");
  report.add("a never ran");
  report.add("b never ran");
  EXPECT_EQ(report.text(), "a never ran; b never ran");
}

}  // namespace
}  // namespace gpufuzz
