// FaultPlanTests.cpp: the plan language: every valid form, every malformed one at its exact place.
#include "renderer/faults/FaultPlan.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/InputError.h"

namespace gpufuzz {
namespace {

FaultRule onlyRule(std::string_view text) {
  const FaultPlan plan = parseFaultPlan(text, "t.plan");
  EXPECT_EQ(plan.rules.size(), 1U) << text;
  return plan.rules.empty() ? FaultRule{} : plan.rules.front();
}

TEST(FaultPlanParser, EveryEffect) {
  struct Case {
    std::string_view text;
    Effect effect;
    uint64_t delayMs;
  };
  const Case cases[] = {
      {"hang at buf_alloc", Effect::Hang, 0},
      {"spin at buf_alloc", Effect::Spin, 0},
      {"crash at buf_alloc", Effect::Crash, 0},
      {"error at buf_alloc", Effect::Error, 0},
      {"corrupt at launch", Effect::Corrupt, 0},
      {"leak at buf_free", Effect::Leak, 0},
      {"delay=250 at buf_alloc", Effect::Delay, 250},
      {"delay=1 at buf_alloc", Effect::Delay, 1},
      {"delay=3600000 at buf_alloc", Effect::Delay, kMaxDelayMs},
  };
  for (const Case& c : cases) {
    const FaultRule rule = onlyRule(c.text);
    EXPECT_EQ(rule.effect, c.effect) << c.text;
    EXPECT_EQ(rule.delayMs, c.delayMs) << c.text;
    EXPECT_TRUE(rule.conditions.empty()) << c.text;
  }
}

TEST(FaultPlanParser, EveryPoint) {
  const std::pair<std::string_view, CallPoint> points[] = {
      {"ctx_create", CallPoint::CtxCreate},    {"ctx_destroy", CallPoint::CtxDestroy},
      {"buf_alloc", CallPoint::BufAlloc},      {"buf_free", CallPoint::BufFree},
      {"launch", CallPoint::Launch},           {"copy_to_device", CallPoint::CopyToDevice},
      {"copy_to_host", CallPoint::CopyToHost}, {"sync", CallPoint::Sync},
  };
  for (const auto& [name, point] : points) {
    for (std::string_view effect : {"hang", "spin", "crash", "error", "delay=5"}) {
      const std::string text = std::string(effect) + " at " + std::string(name);
      EXPECT_EQ(onlyRule(text).point, point) << text;
    }
  }
}

// The extension: leak only where memory is returned, corrupt only where bytes are produced.
TEST(FaultPlanParser, LeakAndCorruptOnlyWhereTheyMeanSomething) {
  const std::vector<CallPoint> leakAt = {CallPoint::BufFree, CallPoint::CtxDestroy};
  const std::vector<CallPoint> corruptAt = {CallPoint::Launch, CallPoint::CopyToDevice,
                                            CallPoint::CopyToHost};
  for (CallPoint point : kAllCallPoints) {
    const std::string name(callPointName(point));
    for (const auto& [effect, allowed] :
         {std::pair{std::string("leak"), leakAt}, std::pair{std::string("corrupt"), corruptAt}}) {
      const std::string text = effect + " at " + name;
      const bool meaningful = std::find(allowed.begin(), allowed.end(), point) != allowed.end();
      if (meaningful) {
        EXPECT_EQ(onlyRule(text).point, point) << text;
      } else {
        EXPECT_THROW(parseFaultPlan(text, "t.plan"), InputError) << text;
      }
    }
  }
}

TEST(FaultPlanParser, EveryCounter) {
  const std::pair<std::string_view, Counter> counters[] = {
      {"ctx_index", Counter::CtxIndex},
      {"live_contexts", Counter::LiveContexts},
      {"live_buffers", Counter::LiveBuffers},
      {"ctx_buffers", Counter::CtxBuffers},
      {"pending", Counter::Pending},
      {"orphaned_buffers", Counter::OrphanedBuffers},
      {"ctx_destroyed_with_live_buffers", Counter::CtxDestroyedWithLiveBuffers},
      {"ctx_destroyed_with_pending", Counter::CtxDestroyedWithPending},
      {"freed_with_pending", Counter::FreedWithPending},
      {"launches", Counter::Launches},
      {"copies_to_host", Counter::CopiesToHost},
      {"refs", Counter::Refs},
      {"calls", Counter::Calls},
      {"ctx_calls", Counter::CtxCalls},
  };
  for (const auto& [name, counter] : counters) {
    const std::string text = "hang at sync when " + std::string(name) + " >= 3";
    const FaultRule rule = onlyRule(text);
    ASSERT_EQ(rule.conditions.size(), 1U) << text;
    EXPECT_EQ(rule.conditions[0], (Condition{counter, Comparison::Ge, 3})) << text;
  }
}

TEST(FaultPlanParser, FirstInCtxIsCtxCallsZero) {
  const FaultRule rule = onlyRule("hang at buf_alloc when first_in_ctx");
  ASSERT_EQ(rule.conditions.size(), 1U);
  EXPECT_EQ(rule.conditions[0], (Condition{Counter::CtxCalls, Comparison::Eq, 0}));
}

TEST(FaultPlanParser, EveryComparison) {
  const std::pair<std::string_view, Comparison> comparisons[] = {
      {">=", Comparison::Ge}, {"<=", Comparison::Le}, {"==", Comparison::Eq},
      {"!=", Comparison::Ne}, {">", Comparison::Gt},  {"<", Comparison::Lt},
  };
  for (const auto& [symbol, cmp] : comparisons) {
    for (const std::string& text : {"hang at sync when refs " + std::string(symbol) + " 7",
                                    "hang at sync when refs" + std::string(symbol) + "7"}) {
      const FaultRule rule = onlyRule(text);
      ASSERT_EQ(rule.conditions.size(), 1U) << text;
      EXPECT_EQ(rule.conditions[0], (Condition{Counter::Refs, cmp, 7})) << text;
    }
  }
}

TEST(FaultPlanParser, ConditionsJoinedByAnd) {
  const FaultRule rule = onlyRule(
      "hang at buf_alloc when first_in_ctx and ctx_destroyed_with_pending >= 1 and ctx_index >= 2 "
      "and live_buffers != 18446744073709551615");
  const std::vector<Condition> expected = {
      {Counter::CtxCalls, Comparison::Eq, 0},
      {Counter::CtxDestroyedWithPending, Comparison::Ge, 1},
      {Counter::CtxIndex, Comparison::Ge, 2},
      {Counter::LiveBuffers, Comparison::Ne, 18446744073709551615ULL},
  };
  EXPECT_EQ(rule.conditions, expected);
}

TEST(FaultPlanParser, CommentsBlankLinesCrlfAndTabs) {
  const FaultPlan plan = parseFaultPlan(
      "# a plan\r\n"
      "\r\n"
      "   \t \n"
      "\thang\tat  buf_alloc\twhen first_in_ctx   # the seed's hang\r\n"
      "  # hang at nowhere: comments are not parsed\n"
      "error at buf_free when refs >= 1#no blank before the comment\n"
      "delay=10 at sync",  // no final newline
      "t.plan");
  ASSERT_EQ(plan.rules.size(), 3U);
  EXPECT_EQ(plan.rules[0].line, 4);
  EXPECT_EQ(plan.rules[0].text, "hang\tat  buf_alloc\twhen first_in_ctx");
  EXPECT_EQ(plan.rules[1].line, 6);
  EXPECT_EQ(plan.rules[1].text, "error at buf_free when refs >= 1");
  EXPECT_EQ(plan.rules[2].line, 7);
  EXPECT_EQ(plan.rules[2].text, "delay=10 at sync");
  EXPECT_EQ(plan.rules[2].delayMs, 10U);
  EXPECT_EQ(plan.name, "t.plan");
  EXPECT_EQ(plan.file, "t.plan");
}

TEST(FaultPlanParser, EmptyAndCommentOnlyPlansHaveNoRules) {
  EXPECT_TRUE(parseFaultPlan("", "t.plan").rules.empty());
  EXPECT_TRUE(parseFaultPlan("\n\n# nothing\n", "t.plan").rules.empty());
}

TEST(FaultPlanParser, CiteNamesPlanLineAndRule) {
  const FaultPlan plan = parseFaultPlan("\nerror at buf_free when refs >= 1  # strict\n", "x.plan");
  EXPECT_EQ(plan.cite(plan.rules.at(0)), "x.plan:2: error at buf_free when refs >= 1");
}

struct Malformed {
  std::string_view text;
  int line;
  int column;
  std::string_view message;  // a part of the message that must appear
};

const Malformed kMalformed[] = {
    {"hangs at sync", 1, 1, "unknown effect 'hangs'"},
    {"Hang at sync", 1, 1, "unknown effect 'Hang'"},
    {"== at sync", 1, 1, "expected an effect, found '=='"},
    {"hang at synch", 1, 9, "unknown call point 'synch'"},
    {"hang at ==", 1, 9, "expected a call point"},
    {"hang at sync when bogus >= 1", 1, 19, "unknown counter 'bogus'"},
    {"hang at sync when refs => 1", 1, 24, "unknown comparison '=>'"},
    {"hang at sync when refs = 1", 1, 24, "unknown comparison '='"},
    {"hang at sync when refs 1", 1, 24, "expected a comparison"},
    {"hang at sync when refs", 1, 23, "expected a comparison"},
    {"hang at sync when refs >=", 1, 26, "expected a number after '>='"},
    {"hang at sync when refs >= # one", 1, 26, "expected a number after '>='"},
    {"hang at sync when refs >= =", 1, 27, "expected a number after '>=', found '='"},
    {"hang at sync when refs >= x", 1, 27, "'x' is not a number"},
    {"hang at sync when refs >= -1", 1, 27, "'-1' is not a number"},
    {"hang at sync when refs >= 1.5", 1, 27, "'1.5' is not a number"},
    {"hang at sync when refs >= 18446744073709551616", 1, 27, "is out of range"},
    {"hang sync", 1, 6, "expected 'at', found 'sync'"},
    {"hang", 1, 5, "expected 'at' after the effect"},
    {"hang at", 1, 8, "expected a call point"},
    {"hang at sync when", 1, 18, "expected a condition after 'when'"},
    {"hang at sync when # nothing", 1, 18, "expected a condition after 'when'"},
    {"hang at sync when and refs >= 1", 1, 19, "found 'and'"},
    {"hang at sync when refs >= 1 and", 1, 32, "expected a condition after 'and'"},
    {"hang at sync when refs >= 1 and and", 1, 33, "found 'and'"},
    {"hang at sync now", 1, 14, "unexpected 'now'"},
    {"hang at sync sync", 1, 14, "unexpected 'sync'"},
    {"hang at sync when refs >= 1 or calls == 0", 1, 29, "join conditions with 'and'"},
    {"hang at sync when refs >= 1 2", 1, 29, "unexpected '2'"},
    {"hang at sync when refs >= 1 when calls == 0", 1, 29, "unexpected 'when'"},
    {"hang at sync when first_in_ctx == 0", 1, 32, "first_in_ctx takes no comparison"},
    {"delay at sync", 1, 6, "delay=MS"},
    {"delay = 5 at sync", 1, 6, "delay=MS"},
    {"delay==5 at sync", 1, 6, "delay=MS"},
    {"delay= at sync", 1, 7, "expected milliseconds right after 'delay='"},
    {"delay= 5 at sync", 1, 7, "expected milliseconds right after 'delay='"},
    {"delay=abc at sync", 1, 7, "'abc' is not a number"},
    {"delay=5ms at sync", 1, 7, "'5ms' is not a number"},
    {"delay=0 at sync", 1, 7, "'0' is out of range (1..3600000)"},
    {"delay=3600001 at sync", 1, 7, "'3600001' is out of range (1..3600000)"},
    {"leak at launch", 1, 9,
     "leak has no meaning at launch: leak applies only at buf_free or ctx_destroy"},
    {"corrupt at buf_free", 1, 12,
     "corrupt has no meaning at buf_free: corrupt applies only at launch, copy_to_device or "
     "copy_to_host"},
    {"\thang\tat\tsync\twhen\tbogus >= 1", 1, 20, "unknown counter 'bogus'"},
    {"# fine\n\nhang at sync\n  spin at lunch\n", 4, 11, "unknown call point 'lunch'"},
    {"hang at sync\r\nspin at lunch\r\n", 2, 9, "unknown call point 'lunch'"},
    {"hang at sync when refs >= 1\nhang at sync when refs >= 1 and\r\n", 2, 32,
     "expected a condition after 'and'"},
};

TEST(FaultPlanParser, MalformedPlansFailAtTheOffendingToken) {
  for (const Malformed& m : kMalformed) {
    SCOPED_TRACE(std::string(m.text));
    try {
      parseFaultPlan(m.text, "t.plan");
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "t.plan");
      EXPECT_EQ(e.line(), m.line);
      EXPECT_EQ(e.column(), m.column);
      EXPECT_NE(e.message().find(m.message), std::string::npos) << e.what();
      const std::string place =
          "t.plan:" + std::to_string(m.line) + ":" + std::to_string(m.column) + ": ";
      EXPECT_EQ(std::string(e.what()).rfind(place, 0), 0U) << e.what();
    }
  }
}

TEST(FaultPlanParser, UnknownNamesListWhatIsKnown) {
  const auto messageOf = [](std::string_view text) {
    try {
      parseFaultPlan(text, "t.plan");
    } catch (const InputError& e) {
      return e.message();
    }
    return std::string();
  };
  const std::string effect = messageOf("boom at sync");
  EXPECT_NE(effect.find("hang, spin, crash, error, corrupt, leak or delay=MS"), std::string::npos)
      << effect;
  const std::string point = messageOf("hang at nowhere");
  EXPECT_NE(point.find("ctx_create, ctx_destroy, buf_alloc, buf_free, launch, copy_to_device, "
                       "copy_to_host or sync"),
            std::string::npos)
      << point;
  const std::string counter = messageOf("hang at sync when nothing > 1");
  EXPECT_NE(counter.find("first_in_ctx, ctx_index, live_contexts"), std::string::npos) << counter;
  const std::string cmp = messageOf("hang at sync when refs => 1");
  EXPECT_NE(cmp.find(">=, <=, ==, !=, > or <"), std::string::npos) << cmp;
}

}  // namespace
}  // namespace gpufuzz
