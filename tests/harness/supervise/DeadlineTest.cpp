// DeadlineTest.cpp: deadlines calibrated from observed latencies, overall and by kind.
#include <gtest/gtest.h>

#include "base/InputError.h"
#include "harness/supervise/Deadline.h"

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
  // A context is a stream and a pool (microseconds), not a cuCtxCreate (~120 ms): no start-up
  // deadline of its own, and no higher floor.
  EXPECT_LT(async.uncalibrated, cuda.uncalibrated);
  EXPECT_LE(async.floor, cuda.floor);
  EXPECT_GE(async.floor, DeadlineSettings::forBackend("sim").floor);
  EXPECT_LE(async.confirmFloor, cuda.confirmFloor);
  DeadlineCalibrator calibrator(async);
  EXPECT_EQ(calibrator.startDeadline(), async.start);
}

TEST(Deadline, TheCudaDriverModelWaitsLongerForItsFirstContextsOnCudaAsync) {
  // Its first cuCtxCreate in a fresh process took 2.2-2.9 s on the H200: until calibrated, its
  // operations get seconds, not the renderer's 1 s. Other models and backends are unchanged.
  const DeadlineSettings renderer = DeadlineSettings::forBackend("cuda-async", "renderer");
  const DeadlineSettings driver = DeadlineSettings::forBackend("cuda-async", "cuda-driver");
  EXPECT_EQ(renderer.uncalibrated, DeadlineSettings::forBackend("cuda-async").uncalibrated);
  EXPECT_GE(driver.uncalibrated, Millis{5'000});
  EXPECT_EQ(driver.floor, renderer.floor);
  DeadlineCalibrator calibrator(driver);
  EXPECT_GE(calibrator.deadline(), Millis{5'000});
  EXPECT_GE(DeadlineSettings::forBackend("cuda", "cuda-driver").uncalibrated,
            DeadlineSettings::forBackend("cuda").uncalibrated);
}

}  // namespace
}  // namespace gpufuzz

namespace gpufuzz {
namespace {

// On cuda a child's operation waits behind the other children's in the driver: a tail bounded by
// the jobs. Its deadlines are 5 x p99 above a 1 s floor (a hang seen in 1-2 s at the default 2
// jobs, measured p99s of 0.1-0.4 s), but 3 s until enough operations were seen.
TEST(Deadline, CudaSeesAHangWithinTwoSecondsOnceCalibrated) {
  const DeadlineSettings cuda = DeadlineSettings::forBackend("cuda");
  DeadlineCalibrator c(cuda);
  EXPECT_EQ(c.deadline(), Millis{3'000}) << "nothing seen yet";
  for (int i = 0; i < 31; ++i)
    c.observe("ctx_create", std::chrono::microseconds(140'000));
  EXPECT_EQ(c.deadline(), Millis{3'000}) << "31 operations are not a calibration";
  c.observe("buf_create", std::chrono::microseconds(2'000));
  EXPECT_EQ(c.deadline(), Millis{1'000}) << "5 x 140 ms, raised to the floor";
  // The p99s measured with 2 jobs on the H200: 0.1-0.3 s by kind, 0.4 s over every kind.
  for (int i = 0; i < 200; ++i) {
    c.observe("ctx_create", std::chrono::microseconds(i % 50 == 0 ? 270'000 : 150'000));
    c.observe("buf_create", std::chrono::microseconds(i % 25 == 0 ? 90'000 : 3'000));
    c.observe("ctx_destroy", std::chrono::microseconds(i % 20 == 0 ? 400'000 : 70'000));
  }
  for (const auto& [op, deadline] : c.kindDeadlines())
    EXPECT_LE(deadline, Millis{2'000}) << op;
  EXPECT_LE(c.deadline(), Millis{2'000});
  EXPECT_EQ(c.deadlineFor("buf_create"), Millis{1'000});
  EXPECT_EQ(c.deadlineFor("ctx_destroy"), Millis{2'000});  // 5 x 400 ms
  // A confirmation waits 4 x the deadline, at least 10 s.
  EXPECT_EQ(c.confirmationDeadline(), Millis{10'000});
  EXPECT_EQ(c.kindConfirmationDeadlines().at("buf_create"), Millis{10'000});
  // Other backends keep a factor of 20 and no separate start-up deadline.
  for (const char* other : {"sim", "cuda-async", "opencl", "vulkan", "target"}) {
    const DeadlineSettings s = DeadlineSettings::forBackend(other);
    EXPECT_EQ(s.factor, 20u) << other;
    EXPECT_EQ(DeadlineCalibrator(s).deadline(), s.floor) << other;
  }
}

TEST(Deadline, DescribesEachKindAndThoseStillUnderTheOverallDeadline) {
  DeadlineSettings s;
  s.factor = 10;
  s.floor = Millis{100};
  DeadlineCalibrator c(s);
  EXPECT_EQ(c.describeKinds(), "");
  for (int i = 0; i < 40; ++i)
    c.observe("draw", std::chrono::microseconds(12'340));
  for (int i = 0; i < 3; ++i)
    c.observe("end", std::chrono::microseconds(1'000));
  EXPECT_EQ(c.describeKinds(), "draw 123 ms (p99 12.34 ms of 40); overall: end (3)");
  s.fixed = Millis{42};
  EXPECT_EQ(DeadlineCalibrator(s).describeKinds(), "");
}

}  // namespace
}  // namespace gpufuzz

namespace gpufuzz {
namespace {

// `end` releases what a sequence left, several objects at once: on the H200 the slowest kind on
// cuda (p99 570 ms, against 270 ms for a context's create). It has its own deadline but does not
// set the one of kinds not yet calibrated; a kind seen a few times is never given less than its
// own samples ask for.
TEST(Deadline, EndDoesNotSetTheDeadlineOfKindsNotYetCalibrated) {
  DeadlineCalibrator c(DeadlineSettings::forBackend("cuda"));
  for (int i = 0; i < 100; ++i) {
    c.observe("create", std::chrono::microseconds(270'000));
    c.observe("draw", std::chrono::microseconds(100));
  }
  for (int i = 0; i < 5; ++i)
    c.observe("end", std::chrono::microseconds(600'000));
  EXPECT_EQ(c.deadline(), Millis{1'350}) << "5 x the creates' 270 ms, not the ends' 600 ms";
  EXPECT_EQ(c.deadlineFor("buf_create"), Millis{1'350}) << "a kind never seen";
  EXPECT_EQ(c.deadlineFor("end"), Millis{3'000}) << "5 samples, but they ask for more";
  for (int i = 0; i < 3; ++i)
    c.observe("destroy", std::chrono::microseconds(200'000));
  EXPECT_EQ(c.deadlineFor("destroy"), Millis{1'350}) << "3 samples that ask for less: overall";
  for (int i = 0; i < 40; ++i)
    c.observe("end", std::chrono::microseconds(500'000));
  EXPECT_EQ(c.deadlineFor("end"), Millis{3'000});  // calibrated: 5 x its p99 of 600 ms
  EXPECT_EQ(c.deadline(), Millis{1'350});
  EXPECT_NE(c.describeKinds().find("end 3000 ms (p99 600.00 ms of 45)"), std::string::npos)
      << c.describeKinds();
  EXPECT_NE(c.describeKinds().find("overall: destroy (3)"), std::string::npos) << c.describeKinds();
}

}  // namespace
}  // namespace gpufuzz

namespace gpufuzz {
namespace {

// --confirm-deadline MS replaces the confirmation's factor and floor, but a confirmation never
// waits less than the deadline it confirms.
TEST(Deadline, AFixedConfirmationDeadlineReplacesTheFloorButNotTheDeadline) {
  DeadlineSettings target = DeadlineSettings::forBackend("target");
  DeadlineCalibrator automatic(target);
  EXPECT_EQ(automatic.confirmationDeadline(), Millis{10'000}) << "the target's floor";
  target.confirmFixed = Millis{1'500};
  DeadlineCalibrator fixed(target);
  EXPECT_EQ(fixed.confirmationDeadline(), Millis{1'500});
  for (int i = 0; i < 64; ++i)
    fixed.observe("draw", std::chrono::microseconds(200'000));
  EXPECT_EQ(fixed.deadlineFor("draw"), Millis{4'000}) << "20 x 200 ms";
  EXPECT_EQ(fixed.kindConfirmationDeadlines().at("draw"), Millis{4'000}) << "not below it";
  target.fixed = Millis{250};
  EXPECT_EQ(DeadlineCalibrator(target).confirmationDeadline(), Millis{1'500});
}

}  // namespace
}  // namespace gpufuzz
