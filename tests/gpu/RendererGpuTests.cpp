// RendererGpuTests.cpp: GpuRenderer on a real CUDA device, against the sim backend and the model.
// Images must be bit-exact on cuda, on sim and in the reference model; each teardown policy must
// show what the driver really does with it. Without a usable CUDA device every test fails: a GPU
// run that skipped would look like a pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "model/renderer/ReferenceModel.h"
#include "renderer/Backends.h"
#include "renderer/GpuRenderer.h"
#include "renderer/Raster.h"
#include "renderer/TeardownPolicy.h"
#include "renderer/device/Device.h"
#include "renderer/device/DeviceError.h"
#include "tests/gpu/DriverMemory.h"
#include "tests/renderer/ImageAgreement.h"

namespace gpufuzz {
namespace {

using testing::imageDifference;

std::unique_ptr<Device> makeDevice(std::string_view backend) {
  return std::make_unique<Device>(makeBackend(backend));
}

/// Records the counters every call saw, to show which risky path a policy really took.
class CallLog final : public Interceptor {
 public:
  struct Call {
    CallPoint point;
    CounterSnapshot counters;
  };
  Alteration before(const CallSite& site, const CounterSnapshot& counters) override {
    calls.push_back({site.point, counters});
    return {};
  }
  /// The largest value `counter` had at any call at `point`.
  uint64_t most(CallPoint point, Counter counter) const {
    uint64_t m = 0;
    for (const Call& c : calls) {
      if (c.point == point && c.counters[counter] > m) m = c.counters[counter];
    }
    return m;
  }
  std::vector<Call> calls;
};

class RendererGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      cuda_ = makeDevice("cuda");
    } catch (const DeviceUnavailable& e) {
      FAIL() << "these tests need a usable CUDA device: " << e.what();
    }
  }

  std::unique_ptr<Device> cuda_;
};

TEST_F(RendererGpuTest, ImagesMatchTheSimBackendAndTheModel) {
  testing::expectImagesAgreeWithSimAndModel(*cuda_);
}

/// Draws into a new renderer and expects the model's image: the device still works.
void expectAWorkingRenderer(Device& device, TeardownPolicy policy) {
  GpuRenderer next(device, 37, 23, policy);
  next.setTextures(5, 64, 17);
  next.draw(300, 18);
  next.draw(2, 19);
  std::vector<uint32_t> want(37 * 23, 0U);
  drawInto(want, 37, 23, 300, 18, 5, 64, 17);
  drawInto(want, 37, 23, 2, 19, 5, 64, 17);
  EXPECT_EQ(imageDifference(next.readBack(), want, 37), "") << "the renderer after the first";
  next.release();
}

/// Textures replaced while a draw that samples them is queued, a read-back, and a large draw
/// left queued at release: the paths no-texture-wait and no-destroy-sync take without waiting.
void driveToRelease(GpuRenderer& r) {
  r.setTextures(5, 7, 11);
  r.draw(300, 1);
  r.setTextures(16, 64, 12);
  r.draw(1024, 2);
  std::vector<uint32_t> want(size_t{r.width()} * r.height(), 0U);
  drawInto(want, r.width(), r.height(), 300, 1, 5, 7, 11);
  drawInto(want, r.width(), r.height(), 1024, 2, 16, 64, 12);
  EXPECT_EQ(imageDifference(r.readBack(), want, r.width()), "");
  r.draw(1024, 3);
}

// The device's own account (cuMemGetInfo), not the backend's: renderers created, drawn,
// retextured and released by the shipped policy give every byte back to the driver.
TEST_F(RendererGpuTest, ShippedTeardownLeaksNothingByTheDriversCount) {
  const testing::DriverMemory memory;
  const auto freeBytes = [&] { return memory.freeBytes(); };
  constexpr int64_t kMiB = int64_t{1} << 20;
  // A warm-up cycle: the driver keeps some per-process state after the first context.
  { GpuRenderer warm(*cuda_, 64, 64, TeardownPolicy::Shipped); }
  const int64_t before = freeBytes();
  int64_t lowest = before;
  for (uint32_t cycle = 0; cycle < 12; ++cycle) {
    GpuRenderer r(*cuda_, 1024, 1024, TeardownPolicy::Shipped);
    r.setTextures(16, 1024, cycle);  // 64 MiB of textures
    r.draw(256, cycle);
    r.setTextures(8, 512, cycle + 100);
    r.draw(128, cycle);
    if (cycle % 3 == 0) r.readBack();
    lowest = std::min(lowest, freeBytes());
    r.release();
  }
  const int64_t after = freeBytes();
  std::cout << "[ driver   ] free " << before / kMiB << " MiB before, " << lowest / kMiB
            << " MiB at the lowest, " << after / kMiB << " MiB after 12 renderers\n";
  EXPECT_GE(before - lowest, 32 * kMiB) << "the check would not see a renderer's memory";
  EXPECT_LE(before - after, 2 * kMiB) << "memory the shipped teardown did not give back";
  EXPECT_EQ(cuda_->memoryInUse(), MemoryInUse{});
}

TEST_F(RendererGpuTest, PoliciesThatKeepBuffersBeforeContextReleaseCleanly) {
  for (TeardownPolicy policy :
       {TeardownPolicy::Shipped, TeardownPolicy::NoTextureWait, TeardownPolicy::NoDestroySync}) {
    SCOPED_TRACE(std::string(policyName(policy)));
    const auto log = std::make_shared<CallLog>();
    cuda_->addInterceptor(log);
    {
      GpuRenderer r(*cuda_, 192, 128, policy);
      driveToRelease(r);
      EXPECT_NO_THROW(r.release());
    }
    EXPECT_EQ(cuda_->memoryInUse(), MemoryInUse{});

    // The policy really took its shortcut on the driver, and the driver tolerated it. A buffer
    // is freed under a queued draw when textures are replaced without a wait, and when the
    // teardown frees without one.
    const Defenses d = defensesOf(policy);
    EXPECT_EQ(log->most(CallPoint::BufFree, Counter::Refs) > 0,
              !d.textureReplaceWaits || !d.destroyWaits)
        << "a buffer freed while a queued draw referenced it";
    EXPECT_EQ(log->most(CallPoint::CtxDestroy, Counter::Pending) > 0, !d.destroyWaits)
        << "the context destroyed with work queued";
    EXPECT_EQ(log->most(CallPoint::CtxDestroy, Counter::CtxBuffers), 0U)
        << "every buffer freed before the context";

    expectAWorkingRenderer(*cuda_, policy);
    EXPECT_EQ(cuda_->memoryInUse(), MemoryInUse{});
  }
}

TEST_F(RendererGpuTest, ContextFirstReleaseFailsInCuMemFreeAndTheNextRendererWorks) {
  GpuRenderer r(*cuda_, 64, 64, TeardownPolicy::ContextFirst);
  driveToRelease(r);
  try {
    r.release();
    ADD_FAILURE() << "release() under context-first succeeded; the driver freed the buffers with "
                     "their context, so freeing them afterwards must fail";
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.point(), CallPoint::BufFree) << e.what();
    EXPECT_EQ(std::string_view(e.what()).rfind("cuMemFree", 0), 0U) << e.what();
    std::cout << "[ driver   ] context-first release: " << e.what() << "\n";
  }
  // The first failed free ends the teardown: the context is gone, and the other 17 of its 18
  // buffers (16 textures, vertices, framebuffer) still owe their frees, as a leak check sees.
  EXPECT_EQ(cuda_->memoryInUse().contexts, 0U);
  EXPECT_EQ(cuda_->memoryInUse().buffers, 17U);
  const MemoryInUse owed = cuda_->memoryInUse();

  // Native Linux does not reproduce the seed's hang: the next context allocates and draws.
  expectAWorkingRenderer(*cuda_, TeardownPolicy::Shipped);
  EXPECT_EQ(cuda_->memoryInUse(), owed);
}

TEST_F(RendererGpuTest, ContextFirstDestructorReportsTheFailureInsteadOfThrowing) {
  ::testing::internal::CaptureStderr();
  {
    GpuRenderer r(*cuda_, 8, 8, TeardownPolicy::ContextFirst);
    r.draw(4, 1);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("gpufuzz: renderer teardown failed: cuMemFree"), std::string::npos) << err;
  expectAWorkingRenderer(*cuda_, TeardownPolicy::Shipped);
}

}  // namespace
}  // namespace gpufuzz
