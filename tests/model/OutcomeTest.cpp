// OutcomeTest.cpp: outcome class names and the text of expectations.
#include "model/Outcome.h"

#include <gtest/gtest.h>

namespace gpufuzz {
namespace {

TEST(Outcome, ClassNamesAreTheContractsAndRoundTrip) {
  const std::vector<std::string_view> names = {"pass",  "hang",  "spin",     "slow",
                                               "crash", "error", "mismatch", "leak"};
  for (size_t i = 0; i < names.size(); ++i) {
    const auto cls = static_cast<OutcomeClass>(i);
    EXPECT_EQ(outcomeClassName(cls), names[i]);
    EXPECT_EQ(parseOutcomeClass(names[i]), cls);
  }
}

TEST(Outcome, UnknownClassNamesAreRejected) {
  EXPECT_EQ(parseOutcomeClass(""), std::nullopt);
  EXPECT_EQ(parseOutcomeClass("Hang"), std::nullopt);
  EXPECT_EQ(parseOutcomeClass("hang "), std::nullopt);
  EXPECT_EQ(parseOutcomeClass("timeout"), std::nullopt);
}

TEST(Outcome, AtTextIsTheOrdinalOrEnd) {
  EXPECT_EQ(atText(At{}), "end");
  EXPECT_TRUE(At{}.isEnd());
  EXPECT_EQ(atText(At{3}), "3");
  EXPECT_FALSE(At{1}.isEnd());
}

TEST(Outcome, ExpectationTextOmitsAnAbsentPlace) {
  EXPECT_EQ(expectationText({}), "pass");
  EXPECT_EQ(expectationText({OutcomeClass::Leak, std::nullopt}), "leak");
  EXPECT_EQ(expectationText({OutcomeClass::Hang, At{3}}), "hang at 3");
  EXPECT_EQ(expectationText({OutcomeClass::Error, At{At::kEnd}}), "error at end");
  EXPECT_EQ(expectationText({OutcomeClass::Spin, std::nullopt}), "spin");
}

}  // namespace
}  // namespace gpufuzz
