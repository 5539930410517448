// SimBackendTest.cpp: the sim device's semantics: deferred completion, stream-ordered free,
// use-after-free detection, orphaned buffers, exact accounting.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "renderer/Raster.h"
#include "renderer/device/DeviceError.h"
#include "renderer/sim/SimBackend.h"

namespace gpufuzz {
namespace {

std::span<const std::byte> bytes(const std::vector<uint32_t>& v) {
  return std::as_bytes(std::span(v));
}

uint32_t readWord(Backend& sim, ContextId ctx, BufferId buf) {
  uint32_t value = 0;
  sim.copyToHost(ctx, buf, std::as_writable_bytes(std::span(&value, 1)));
  return value;
}

/// A one-triangle launch that covers the whole 4x4 image with an opaque colour.
struct CoveringDraw {
  BufferId fb, vertices;
  RasterLaunch launch;
  raster::Triangle tri{};
  CoveringDraw(Backend& sim, ContextId ctx) {
    fb = sim.allocBuffer(ctx, 4 * 4 * 4);
    vertices = sim.allocBuffer(ctx, sizeof(raster::Triangle));
    tri.x[0] = -10;
    tri.y[0] = -10;
    tri.x[1] = 40;
    tri.y[1] = -10;
    tri.x[2] = -10;
    tri.y[2] = 40;
    tri.color = 0xff112233U;
    sim.copyToDevice(ctx, vertices, std::as_bytes(std::span(&tri, 1)));
    launch.framebuffer = fb;
    launch.vertices = vertices;
    launch.width = 4;
    launch.height = 4;
    launch.triangleCount = 1;
  }
};

TEST(SimBackend, EnqueuedWorkCompletesOnlyWhenTheQueueIsWaitedFor) {
  auto sim = makeSimBackend();
  const ContextId ctx = sim->createContext();
  CoveringDraw draw(*sim, ctx);
  sim->launch(ctx, draw.launch);
  // Another context's wait does not drain this queue: freeing the framebuffer now is deferred.
  const ContextId other = sim->createContext();
  sim->synchronize(other);
  EXPECT_EQ(readWord(*sim, ctx, draw.fb), 0xff112233U);
}

TEST(SimBackend, FreeWhileQueuedWorkReferencesTheBufferHappensInStreamOrder) {
  auto sim = makeSimBackend();
  const ContextId ctx = sim->createContext();
  CoveringDraw draw(*sim, ctx);
  const MemoryInUse before = sim->memoryInUse();
  BufferId tex = sim->allocBuffer(ctx, 4);
  draw.launch.textures[0] = tex;
  draw.launch.textureCount = 1;
  draw.launch.textureSize = 1;
  sim->launch(ctx, draw.launch);
  sim->freeBuffer(tex);
  // Still held: the queued launch reads it.
  EXPECT_EQ(sim->memoryInUse().buffers, before.buffers + 1);
  sim->synchronize(ctx);
  EXPECT_EQ(sim->memoryInUse(), before);
}

TEST(SimBackend, QueuedWorkOnAnotherContextThatOutlivesTheFreeIsAUseAfterFree) {
  auto sim = makeSimBackend();
  const ContextId a = sim->createContext();
  const ContextId b = sim->createContext();
  CoveringDraw draw(*sim, a);
  sim->synchronize(a);
  const BufferId tex = sim->allocBuffer(a, 4);
  draw.launch.textures[0] = tex;
  draw.launch.textureCount = 1;
  draw.launch.textureSize = 1;
  sim->launch(b, draw.launch);  // b's queue reads a's texture
  sim->freeBuffer(tex);         // deferred onto a's queue, which does not wait for b's
  sim->synchronize(a);
  try {
    sim->synchronize(b);
    FAIL() << "expected a use-after-free";
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.point(), CallPoint::Sync);
    EXPECT_NE(std::string(e.what()).find("SIM_USE_AFTER_FREE"), std::string::npos) << e.what();
  }
}

TEST(SimBackend, ContextDestroyedBeforeItsBuffersLeavesThemOrphanedAndFreeable) {
  auto sim = makeSimBackend(SimLimits{1ULL << 30, 1000});
  const ContextId ctx = sim->createContext();
  const BufferId buf = sim->allocBuffer(ctx, 256);
  sim->destroyContext(ctx);
  EXPECT_EQ(sim->memoryInUse(), (MemoryInUse{256 + 1000, 1, 1}));
  sim->freeBuffer(buf);
  EXPECT_EQ(sim->memoryInUse(), MemoryInUse{});
  // The next context allocates normally: the sim without a fault plan has no bug.
  const ContextId next = sim->createContext();
  EXPECT_NO_THROW(sim->allocBuffer(next, 256));
}

TEST(SimBackend, AccountingIsExactAndBoundedByCapacity) {
  auto sim = makeSimBackend(SimLimits{10'000, 1000});
  const ContextId ctx = sim->createContext();
  const BufferId a = sim->allocBuffer(ctx, 4000);
  EXPECT_EQ(sim->memoryInUse(), (MemoryInUse{5000, 1, 1}));
  EXPECT_THROW(sim->allocBuffer(ctx, 5001), DeviceError);
  const BufferId b = sim->allocBuffer(ctx, 5000);
  sim->freeBuffer(a);
  sim->freeBuffer(b);
  sim->destroyContext(ctx);
  EXPECT_EQ(sim->memoryInUse(), MemoryInUse{});
}

TEST(SimBackend, HugeBuffersCostNothingUntilTouched) {
  auto sim = makeSimBackend();
  const ContextId ctx = sim->createContext();
  const BufferId big = sim->allocBuffer(ctx, 1ULL << 31);
  EXPECT_EQ(sim->memoryInUse().bytes, (1ULL << 31) + SimLimits{}.contextBytes);
  sim->freeBuffer(big);
}

TEST(SimBackend, InvalidHandlesAreDeviceErrorsNamingTheCall) {
  auto sim = makeSimBackend();
  const ContextId ctx = sim->createContext();
  const BufferId buf = sim->allocBuffer(ctx, 16);
  sim->freeBuffer(buf);
  try {
    sim->freeBuffer(buf);
    FAIL() << "double free accepted";
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.point(), CallPoint::BufFree);
    EXPECT_EQ(std::string(e.what()).rfind("buf_free: ", 0), 0U) << e.what();
  }
  sim->destroyContext(ctx);
  EXPECT_THROW(sim->allocBuffer(ctx, 16), DeviceError);
  EXPECT_THROW(sim->destroyContext(ctx), DeviceError);
  EXPECT_THROW(sim->synchronize(ctx), DeviceError);
}

TEST(SimBackend, LaunchOutsideItsBuffersIsRejected) {
  auto sim = makeSimBackend();
  const ContextId ctx = sim->createContext();
  CoveringDraw draw(*sim, ctx);
  draw.launch.width = 64;
  EXPECT_THROW(sim->launch(ctx, draw.launch), DeviceError);
}

TEST(SimBackend, CorruptXorAltersEveryPixelTheLaunchWrites) {
  auto sim = makeSimBackend();
  const ContextId ctx = sim->createContext();
  CoveringDraw draw(*sim, ctx);
  draw.launch.corruptXor = 0x0f0f0f0fU;
  sim->launch(ctx, draw.launch);
  EXPECT_EQ(readWord(*sim, ctx, draw.fb), 0xff112233U ^ 0x0f0f0f0fU);
}

TEST(SimBackend, UploadsAreCopiedAtEnqueueSoTheSourceMayBeReused) {
  auto sim = makeSimBackend();
  const ContextId ctx = sim->createContext();
  const BufferId buf = sim->allocBuffer(ctx, 4);
  std::vector<uint32_t> word = {7};
  sim->copyToDevice(ctx, buf, bytes(word));
  word[0] = 9;
  EXPECT_EQ(readWord(*sim, ctx, buf), 7U);
}

}  // namespace
}  // namespace gpufuzz
