// SignalsTest.cpp: what guided search learns from a run: states, pairs, counts, the runtime's
// answers and the plan's near misses; only operations the run reached count.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness/search/Signals.h"

namespace gpufuzz {
namespace {

bool hasSignal(const std::vector<Signal>& signals, const std::string& text) {
  return std::any_of(signals.begin(), signals.end(),
                     [&](const Signal& s) { return s.text == text && s.hash == signalHash(text); });
}

std::string texts(const std::vector<Signal>& signals) {
  std::string all;
  for (const Signal& s : signals)
    all += s.text + "\n";
  return all;
}

TEST(AnswerWords, ErrorCodesAndRulesInOrder) {
  EXPECT_EQ(answerWords("clEnqueueReadBuffer: CL_INVALID_VALUE; then VUID-vkCmdDraw-None-02699. "
                        "cuMemFree: CUDA_ERROR_INVALID_VALUE, VK_ERROR_DEVICE_LOST"),
            (std::vector<std::string>{"CL_INVALID_VALUE", "VUID-vkCmdDraw-None-02699",
                                      "CUDA_ERROR_INVALID_VALUE", "VK_ERROR_DEVICE_LOST"}));
  EXPECT_TRUE(answerWords("no codes here, XCL_NOPE").empty());
}

TEST(Signals, StatesPairsAndCountsOfAPassingRun) {
  const Sequence seq = parseSequence("create r0\ndraw r0\ndraw r0\nsync r0\n", "t.seq");
  const std::vector<Signal> s = signalsOf(seq, TrialResult{});
  EXPECT_TRUE(hasSignal(s, "state draw r[]")) << texts(s);
  EXPECT_TRUE(hasSignal(s, "state draw r[pending]")) << texts(s);
  EXPECT_TRUE(hasSignal(s, "pair draw > draw")) << texts(s);
  EXPECT_TRUE(hasSignal(s, "ops draw x2")) << texts(s);
  EXPECT_FALSE(hasSignal(s, "ops draw x3")) << texts(s);
  // Each signal once.
  std::vector<uint64_t> hashes;
  for (const Signal& x : s)
    hashes.push_back(x.hash);
  std::sort(hashes.begin(), hashes.end());
  EXPECT_EQ(std::adjacent_find(hashes.begin(), hashes.end()), hashes.end());
}

TEST(Signals, AFailureCountsOnlyWhatItReachedAndAddsItsAnswers) {
  const Sequence seq = parseSequence("create r0\ndraw r0\nsync r0\nread_back r0\n", "t.seq");
  TrialResult t;
  t.outcome.cls = OutcomeClass::Error;
  t.outcome.at = At{2};
  t.outcome.op = "draw";
  t.outcome.detail = "launch failed: CL_OUT_OF_RESOURCES";
  t.evidence.near.push_back("p.plan:1: hang at sync when launches >= 2: conditions 1 of 1 held");
  const std::vector<Signal> s = signalsOf(seq, t);
  EXPECT_TRUE(hasSignal(s, "outcome error at draw")) << texts(s);
  EXPECT_TRUE(hasSignal(s, "answer draw CL_OUT_OF_RESOURCES")) << texts(s);
  EXPECT_TRUE(
      hasSignal(s, "near p.plan:1: hang at sync when launches >= 2: conditions 1 of 1 held"))
      << texts(s);
  EXPECT_FALSE(hasSignal(s, "ops sync x1")) << texts(s);
  EXPECT_FALSE(hasSignal(s, "ops read_back x1")) << texts(s);
}

TEST(Signals, EachArgumentsMagnitudeOrWordIsASignal) {
  const LifecycleModel& model = internModel(
      parseModel("model sized\nresource buf prefix b\n"
                 "op make -> buf bytes=256 (4..68719476736) mode=fast {fast|slow}\nop drop buf!\n"
                 "release buf\n",
                 "sized.model"));
  const Sequence seq = parseSequence(
      "make b0\nmake b1 bytes=17179869184 mode=slow\nmake b2 bytes=4\n", "t.seq", &model);
  const std::vector<Signal> s = signalsOf(seq, TrialResult{});
  EXPECT_TRUE(hasSignal(s, "arg make bytes 2^9")) << texts(s);   // 256
  EXPECT_TRUE(hasSignal(s, "arg make bytes 2^35")) << texts(s);  // 16 GiB
  EXPECT_TRUE(hasSignal(s, "arg make bytes 2^3")) << texts(s);   // 4
  EXPECT_TRUE(hasSignal(s, "arg make mode fast")) << texts(s);
  EXPECT_TRUE(hasSignal(s, "arg make mode slow")) << texts(s);
  // A run that failed at the first operation reached no other argument.
  TrialResult t;
  t.outcome.cls = OutcomeClass::Error;
  t.outcome.at = At{1};
  t.outcome.op = "make";
  EXPECT_FALSE(hasSignal(signalsOf(seq, t), "arg make bytes 2^35"));
}

TEST(Signals, AnOperationOnANameCarriesTheSizeTheNameWasMadeWith) {
  const LifecycleModel& model =
      internModel(parseModel("model sized\nresource buf prefix b\n"
                             "op make -> buf bytes=256 (4..68719476736) mode=fast {fast|slow}\n"
                             "op fill buf\nop drop buf!\nrelease buf\n",
                             "sized.model"));
  const Sequence big = parseSequence("make b0 bytes=17179869184\nfill b0\n", "t.seq", &model);
  const Sequence small = parseSequence("make b0\nfill b0\ndrop b0\n", "t.seq", &model);
  EXPECT_TRUE(hasSignal(signalsOf(big, TrialResult{}), "sized fill b[size 16^9]"))
      << texts(signalsOf(big, TrialResult{}));
  const std::vector<Signal> s = signalsOf(small, TrialResult{});
  EXPECT_TRUE(hasSignal(s, "sized fill b[size 16^3]")) << texts(s);
  EXPECT_TRUE(hasSignal(s, "sized drop b[size 16^3]")) << texts(s);
  EXPECT_FALSE(hasSignal(s, "sized fill b[size 16^9]")) << texts(s);
}

}  // namespace
}  // namespace gpufuzz
