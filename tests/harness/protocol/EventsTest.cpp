// EventsTest.cpp: the event parser takes a child's words as the child's: names only as models
// write them, counts only in digits, free text under the rule for outside text (OutsideText.h).
#include <gtest/gtest.h>

#include <string>

#include "harness/base/OutsideText.h"
#include "harness/protocol/Events.h"

namespace gpufuzz {
namespace {

using namespace std::string_literals;

TEST(Events, FreeTextComesBackAsValidEscapedText) {
  const auto e = parseEvent("outcome error 2 draw \x00\xff\xfe garbage \x07\x1b[31m"s);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->outcome.detail, "\\x00\\xff\\xfe garbage \\x07\\x1b[31m");
  const auto f = parseEvent("fault error \xc0\xaf rule"s);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->rule, "\\xc0\\xaf rule");
  const auto long_ = parseEvent("outcome mismatch - - " + std::string(4000, '\xff'));
  ASSERT_TRUE(long_);
  EXPECT_LE(long_->outcome.detail.size(), kOutsideLineLimit);
  EXPECT_TRUE(isValidUtf8(long_->outcome.detail));
}

TEST(Events, NamesAreNamesAsModelsWriteThem) {
  EXPECT_TRUE(parseEvent("begin 1 set_textures"));
  EXPECT_FALSE(
      parseEvent("begin 1 Dr\xff"
                 "aw"));
  EXPECT_FALSE(parseEvent("outcome error 1 ../../escape x"));
  EXPECT_FALSE(parseEvent("outcome error 1 Draw x"));
  EXPECT_FALSE(parseEvent("fault h\xe2\x82\xac rule"));
  EXPECT_TRUE(parseEvent("outcome error - - unsupported operation"));
}

TEST(Events, CountsAreDecimalDigits) {
  ASSERT_TRUE(parseEvent("start 3"));
  EXPECT_EQ(parseEvent("start 3")->operations, 3U);
  EXPECT_FALSE(parseEvent("start -1"));  // not 4294967295 operations
  EXPECT_FALSE(parseEvent("start 3x"));
  EXPECT_FALSE(parseEvent("start \xef\xbc\x95"));
  EXPECT_FALSE(parseEvent("start 99999999999"));
}

TEST(Events, CallsCountTwoNumbersTheOverlappedNoMoreThanTheMade) {
  const auto e = parseEvent("calls 120 31");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, Event::Kind::Calls);
  EXPECT_EQ(e->calls, 120U);
  EXPECT_EQ(e->overlapped, 31U);
  EXPECT_EQ(formatEvent(*e), "calls 120 31");
  EXPECT_FALSE(parseEvent("calls 3 4"));
  EXPECT_FALSE(parseEvent("calls 3"));
  EXPECT_FALSE(parseEvent("calls 3 1 2"));
  EXPECT_FALSE(parseEvent("calls -3 1"));
  EXPECT_FALSE(parseEvent("calls 3 x"));
}

TEST(Events, NearAndReachNameASetOrAConditionAndTheRule) {
  struct Case {
    const char* line;
    Event::Kind kind;
    uint64_t held, conditions;
  };
  for (const Case& c : {Case{"near 5 3 p.plan:1: hang at sync when a >= 1 and b >= 2 and c >= 3",
                             Event::Kind::Near, 5, 3},
                        Case{"reach 2 7 p.plan:1: rule", Event::Kind::Reach, 7, 2}}) {
    const auto e = parseEvent(c.line);
    ASSERT_TRUE(e) << c.line;
    EXPECT_EQ(e->kind, c.kind) << c.line;
    EXPECT_EQ(e->held, c.held) << c.line;
    EXPECT_EQ(e->conditions, c.conditions) << c.line;
    EXPECT_EQ(formatEvent(*e), c.line);
  }
  // A set past its conditions, no rule, conditions counted from 0, a value that is no number.
  for (const char* bad : {"near 8 3 p.plan:1: rule", "near 1 1", "reach 0 7 p.plan:1: rule",
                          "reach 1 x p.plan:1: r"}) {
    EXPECT_FALSE(parseEvent(bad)) << bad;
  }
}

TEST(Events, CallsMayComeAnywhereBetweenStartAndTheOutcome) {
  EventOrder order;
  EXPECT_NE(order.accept(*parseEvent("calls 1 0")), "");  // before start
  EXPECT_EQ(order.accept(*parseEvent("start 1")), "");
  EXPECT_EQ(order.accept(*parseEvent("begin 1 create")), "");
  EXPECT_EQ(order.accept(*parseEvent("calls 2 0")), "");
  EXPECT_EQ(order.accept(*parseEvent("done 1")), "");
  EXPECT_EQ(order.accept(*parseEvent("calls 2 1")), "");
  EXPECT_EQ(order.accept(*parseEvent("outcome pass - - ")), "");
  EXPECT_NE(order.accept(*parseEvent("calls 1 0")), "");  // after the outcome
}

}  // namespace
}  // namespace gpufuzz
