// DeadlineTest.cpp: deadlines calibrated from observed latencies, overall and by kind.
#include <gtest/gtest.h>

#include "harness/supervise/Deadline.h"
#include "renderer/InputError.h"

namespace gpufuzz {
namespace {

TEST(Deadline, CalibratesFromThe99thPercentileAboveAFloor) {
  DeadlineSettings s;
  s.factor = 10;
  s.floor = Millis{100};
  DeadlineCalibrator c(s);
  EXPECT_EQ(c.deadline(), Millis{100});
  for (int i = 0; i < 1000; ++i)
    c.observe("draw", std::chrono::microseconds(20'000));
  EXPECT_EQ(c.deadline(), Millis{200});
  c.observe("draw", std::chrono::microseconds(5'000'000));  // one planted delay does not move it
  EXPECT_EQ(c.deadline(), Millis{200});
  EXPECT_GE(c.confirmationDeadline(), c.deadline() * 10);
  EXPECT_EQ(parseDeadlineOption("250"), Millis{250});
  EXPECT_EQ(parseDeadlineOption("auto"), std::nullopt);
  EXPECT_THROW(parseDeadlineOption("fast"), InputError);
  s.fixed = Millis{42};
  EXPECT_EQ(DeadlineCalibrator(s).deadline(), Millis{42});
}

// A kind seen often enough gets its own deadline; a slow kind does not stretch a fast one's,
// and a kind seen rarely gets the deadline over every kind.
TEST(Deadline, EachKindSeenOftenEnoughHasItsOwnDeadline) {
  DeadlineSettings s;
  s.factor = 10;
  s.floor = Millis{100};
  s.ceiling = Millis{60'000};
  s.confirmFactor = 10;
  s.confirmFloor = Millis{1'000};
  DeadlineCalibrator c(s);
  for (int i = 0; i < 31; ++i)
    c.observe("ctx_create", std::chrono::microseconds(500'000));
  EXPECT_TRUE(c.kindDeadlines().empty()) << "31 samples are not enough for a kind";
  c.observe("ctx_create", std::chrono::microseconds(500'000));
  for (int i = 0; i < 500; ++i)
    c.observe("buf_create", std::chrono::microseconds(1'000));
  c.observe("read_back", std::chrono::microseconds(2'000));
  const auto kinds = c.kindDeadlines();
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds.at("ctx_create"), Millis{5'000});
  EXPECT_EQ(kinds.at("buf_create"), Millis{100});  // 10 ms scaled, raised to the floor
  EXPECT_EQ(c.deadlineFor("buf_create"), Millis{100});
  EXPECT_EQ(c.deadlineFor("read_back"), c.deadline());  // one sample: the overall deadline
  EXPECT_EQ(c.deadline(), Millis{5'000});               // p99 over every kind: the slow creates
  EXPECT_EQ(c.kindConfirmationDeadlines().at("ctx_create"), Millis{50'000});
  EXPECT_EQ(c.kindConfirmationDeadlines().at("buf_create"), Millis{1'000});
  EXPECT_NE(c.describe().find("by kind 100..5000 ms"), std::string::npos) << c.describe();
  s.fixed = Millis{42};
  EXPECT_TRUE(DeadlineCalibrator(s).kindDeadlines().empty());
}

}  // namespace
}  // namespace gpufuzz

namespace gpufuzz {
namespace {

TEST(Deadline, CudaAsyncStartsLikeCudaButItsOperationsAreCheaper) {
  const DeadlineSettings cuda = DeadlineSettings::forBackend("cuda");
  const DeadlineSettings async = DeadlineSettings::forBackend("cuda-async");
  // A fresh process pays cuInit and the primary context's retain (~250-350 ms on the H200, more
  // with children contending): the start allowance must cover many times that.
  EXPECT_GE(async.start, Millis{5'000});
  // A context is a stream and a pool (microseconds), not a cuCtxCreate (~120 ms).
  EXPECT_LT(async.floor, cuda.floor);
  EXPECT_GE(async.floor, DeadlineSettings::forBackend("sim").floor);
  EXPECT_LE(async.confirmFloor, cuda.confirmFloor);
  DeadlineCalibrator calibrator(async);
  EXPECT_EQ(calibrator.startDeadline(), async.start);
}

}  // namespace
}  // namespace gpufuzz
