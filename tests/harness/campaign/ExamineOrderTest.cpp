// ExamineOrderTest.cpp: the examiner takes new sites first, then kinds no shrink examined, then
// retries of causes a shrink did not confirm, then variants; first come first within a rank.
#include "harness/campaign/ExamineOrder.h"

#include <gtest/gtest.h>

namespace gpufuzz {
namespace {

/// The order in which an examiner takes all of `waiting`, by their examinedAs, each shrink
/// adding what it examined.
std::vector<std::string> examineAll(std::vector<WaitingFailure> waiting,
                                    std::set<std::string> examined) {
  std::vector<std::string> order;
  while (!waiting.empty()) {
    const std::size_t next = nextToExamine(waiting, examined);
    order.push_back(waiting[next].examinedAs);
    examined.insert(waiting[next].examinedAs);
    waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(next));
  }
  return order;
}

// The queue of an H200 night: an error whose first shrink did not confirm it waited before a
// spin, and a second crash site came last. Before, the spin waited to the stop.
TEST(ExamineOrder, ANewKindGoesBeforeARetryAndANewSiteBeforeBoth) {
  const std::vector<WaitingFailure> waiting{
      {"error; says OUT_OF_MEMORY", true, false},
      {"crash; frames cuMemPoolDestroy", false, true},
      {"spin at end", false, false},
      {"crash; frames cuStreamSynchronize", true, false},
  };
  EXPECT_EQ(
      examineAll(waiting, {"error; says OUT_OF_MEMORY"}),
      (std::vector<std::string>{"crash; frames cuStreamSynchronize", "spin at end",
                                "error; says OUT_OF_MEMORY", "crash; frames cuMemPoolDestroy"}));
}

TEST(ExamineOrder, FirstComeFirstWithinARankAndASecondOfOneCauseAfterTheOthers) {
  const std::vector<WaitingFailure> waiting{
      {"spin at end", false, false},     {"crash; frames a", true, false},
      {"crash; frames b", true, false},  {"crash; frames a", true, false},
      {"slow at destroy", false, false},
  };
  EXPECT_EQ(examineAll(waiting, {}),
            (std::vector<std::string>{"crash; frames a", "crash; frames b", "spin at end",
                                      "slow at destroy", "crash; frames a"}));
  EXPECT_EQ(examineRank({"x", true, false}, {}), 0);
  EXPECT_EQ(examineRank({"x", false, false}, {}), 1);
  EXPECT_EQ(examineRank({"x", true, false}, {"x"}), 2);
  EXPECT_EQ(examineRank({"x", false, true}, {}), 3);
}

}  // namespace
}  // namespace gpufuzz
