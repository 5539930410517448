// GpuRendererTest.cpp: the renderer on the sim device under each teardown policy: images against
// the reference model, the device calls each policy makes, and clean accounting.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "model/renderer/ReferenceModel.h"
#include "renderer/GpuRenderer.h"
#include "renderer/device/Device.h"
#include "renderer/sim/SimBackend.h"

namespace gpufuzz {
namespace {

/// Records every call the seam sees, with its counters.
class Recorder final : public Interceptor {
 public:
  struct Call {
    CallSite site;
    CounterSnapshot counters;
  };
  Alteration before(const CallSite& site, const CounterSnapshot& counters) override {
    calls.push_back({site, counters});
    return {};
  }
  std::vector<CallPoint> points() const {
    std::vector<CallPoint> out;
    for (const Call& c : calls)
      out.push_back(c.site.point);
    return out;
  }
  std::vector<Call> calls;
};

struct Rig {
  Device device{makeSimBackend()};
  std::shared_ptr<Recorder> recorder = std::make_shared<Recorder>();
  Rig() { device.addInterceptor(recorder); }
};

std::vector<uint32_t> modelImage(uint32_t w, uint32_t h,
                                 const std::vector<std::pair<uint32_t, uint32_t>>& draws,
                                 uint32_t texCount = 0, uint32_t texSize = 0,
                                 uint32_t texSeed = 0) {
  std::vector<uint32_t> image(uint64_t{w} * h, 0U);
  for (auto [triangles, seed] : draws)
    drawInto(image, w, h, triangles, seed, texCount, texSize, texSeed);
  return image;
}

TEST(GpuRenderer, ImagesMatchTheModel) {
  Rig rig;
  GpuRenderer r(rig.device, 37, 23, TeardownPolicy::Shipped);
  EXPECT_EQ(r.readBack(), modelImage(37, 23, {}));
  r.draw(12, 5);
  r.draw(1, 99);
  const auto image = r.readBack();
  EXPECT_EQ(image, modelImage(37, 23, {{12, 5}, {1, 99}}));
  EXPECT_NE(image, modelImage(37, 23, {}));
  r.release();
}

TEST(GpuRenderer, TexturedDrawsMatchTheModel) {
  Rig rig;
  GpuRenderer r(rig.device, 64, 64, TeardownPolicy::Shipped);
  r.setTextures(3, 17, 42);
  r.draw(20, 7);
  const auto textured = modelImage(64, 64, {{20, 7}}, 3, 17, 42);
  EXPECT_EQ(r.readBack(), textured);
  EXPECT_NE(textured, modelImage(64, 64, {{20, 7}}));
  r.release();
  EXPECT_EQ(rig.device.memoryInUse(), MemoryInUse{});
}

TEST(GpuRenderer, ConstructionLeavesNothingQueued) {
  Rig rig;
  GpuRenderer r(rig.device, 8, 8, TeardownPolicy::NoDestroySync);
  r.release();
  // The last call (ctx_destroy) saw no pending work even without the destroy-time wait.
  ASSERT_EQ(rig.recorder->calls.back().site.point, CallPoint::CtxDestroy);
  EXPECT_EQ(rig.recorder->calls.back().counters[Counter::Pending], 0U);
}

std::vector<CallPoint> teardownCalls(TeardownPolicy policy) {
  Rig rig;
  auto r = std::make_unique<GpuRenderer>(rig.device, 8, 8, policy);
  r->setTextures(1, 4, 0);
  r->draw(3, 1);
  const std::size_t before = rig.recorder->calls.size();
  r->release();
  const auto all = rig.recorder->points();
  EXPECT_EQ(rig.device.memoryInUse(), MemoryInUse{}) << policyName(policy);
  return {all.begin() + static_cast<std::ptrdiff_t>(before), all.end()};
}

TEST(GpuRenderer, EachPolicyTearsDownInItsOwnOrder) {
  using P = CallPoint;
  EXPECT_EQ(teardownCalls(TeardownPolicy::Shipped),
            (std::vector<P>{P::Sync, P::BufFree, P::BufFree, P::BufFree, P::CtxDestroy}));
  EXPECT_EQ(teardownCalls(TeardownPolicy::NoTextureWait),
            (std::vector<P>{P::Sync, P::BufFree, P::BufFree, P::BufFree, P::CtxDestroy}));
  EXPECT_EQ(teardownCalls(TeardownPolicy::ContextFirst),
            (std::vector<P>{P::Sync, P::CtxDestroy, P::BufFree, P::BufFree, P::BufFree}));
  EXPECT_EQ(teardownCalls(TeardownPolicy::NoDestroySync),
            (std::vector<P>{P::BufFree, P::BufFree, P::BufFree, P::CtxDestroy}));
}

TEST(GpuRenderer, ContextFirstDestroysTheContextWithLiveBuffers) {
  Rig rig;
  GpuRenderer(rig.device, 8, 8, TeardownPolicy::ContextFirst).release();
  GpuRenderer next(rig.device, 8, 8, TeardownPolicy::ContextFirst);
  // The next context's first allocation is offered to interceptors after one such destroy.
  const auto& calls = rig.recorder->calls;
  auto alloc = std::find_if(calls.rbegin(), calls.rend(), [](const Recorder::Call& c) {
    return c.site.point == CallPoint::BufAlloc && c.counters[Counter::CtxCalls] == 0;
  });
  ASSERT_NE(alloc, calls.rend());
  EXPECT_EQ(alloc->counters[Counter::CtxIndex], 1U);
  EXPECT_EQ(alloc->counters[Counter::CtxDestroyedWithLiveBuffers], 1U);
  EXPECT_EQ(alloc->counters[Counter::CtxDestroyedWithPending], 0U);
}

TEST(GpuRenderer, ShippedNeverDestroysAContextWithLiveBuffersOrPendingWork) {
  for (TeardownPolicy policy : {TeardownPolicy::Shipped, TeardownPolicy::NoTextureWait}) {
    Rig rig;
    {
      GpuRenderer r(rig.device, 8, 8, policy);
      r.draw(4, 0);
    }  // the destructor tears down
    GpuRenderer next(rig.device, 8, 8, policy);
    const CounterSnapshot last = rig.recorder->calls.back().counters;
    EXPECT_EQ(last[Counter::CtxDestroyedWithLiveBuffers], 0U);
    EXPECT_EQ(last[Counter::CtxDestroyedWithPending], 0U);
    EXPECT_EQ(last[Counter::FreedWithPending], 0U);
  }
}

TEST(GpuRenderer, NoDestroySyncFreesBuffersThatQueuedWorkStillUses) {
  Rig rig;
  {
    GpuRenderer r(rig.device, 8, 8, TeardownPolicy::NoDestroySync);
    r.draw(4, 0);
  }
  GpuRenderer next(rig.device, 8, 8, TeardownPolicy::NoDestroySync);
  const CounterSnapshot last = rig.recorder->calls.back().counters;
  EXPECT_EQ(last[Counter::FreedWithPending], 2U);  // framebuffer and vertices
  EXPECT_EQ(last[Counter::CtxDestroyedWithPending], 1U);
  EXPECT_EQ(last[Counter::CtxDestroyedWithLiveBuffers], 0U);
}

TEST(GpuRenderer, NoTextureWaitReleasesTexturesADrawStillSamples) {
  for (auto [policy, expectedRefs] :
       {std::pair{TeardownPolicy::NoTextureWait, 2U}, std::pair{TeardownPolicy::Shipped, 0U}}) {
    Rig rig;
    GpuRenderer r(rig.device, 8, 8, policy);
    r.setTextures(1, 4, 0);
    r.draw(4, 0);
    r.setTextures(1, 4, 1);
    const auto& calls = rig.recorder->calls;
    auto free = std::find_if(calls.begin(), calls.end(), [](const Recorder::Call& c) {
      return c.site.point == CallPoint::BufFree;
    });
    ASSERT_NE(free, calls.end());
    EXPECT_EQ(free->counters[Counter::Refs], expectedRefs) << policyName(policy);
    // Refs: its upload and the draw, both still queued. Stream-ordered free: the image is right.
    r.draw(2, 3);
    std::vector<uint32_t> want(64, 0U);
    drawInto(want, 8, 8, 4, 0, 1, 4, 0);
    drawInto(want, 8, 8, 2, 3, 1, 4, 1);
    EXPECT_EQ(r.readBack(), want);
  }
}

}  // namespace
}  // namespace gpufuzz
