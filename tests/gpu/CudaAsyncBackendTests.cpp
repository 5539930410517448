// CudaAsyncBackendTests.cpp: the cuda-async backend on a real device. Images must be bit-exact
// against the shared raster math on the CPU; a buffer outlives its context's destroy and its later
// free is valid and releases the pool; accounting and handle errors follow the Backend contract.
// Without a usable CUDA device every test fails: a GPU run that skipped would look like a pass.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "renderer/Raster.h"
#include "renderer/cuda/CudaAsyncBackend.h"
#include "renderer/cuda/CudaBackend.h"
#include "renderer/device/DeviceError.h"
#include "tests/gpu/DriverMemory.h"
#include "tests/gpu/GpuScenes.h"

namespace gpufuzz {
namespace {

using namespace gpuscenes;

class CudaAsyncBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      backend_ = makeCudaAsyncBackend();
    } catch (const DeviceUnavailable& e) {
      FAIL() << "these tests need a usable CUDA device: " << e.what();
    }
  }

  std::unique_ptr<Backend> backend_;
};

TEST_F(CudaAsyncBackendTest, NamesItselfTheDeviceAndTheDriver) {
  EXPECT_EQ(backend_->name(), "cuda-async");
  const std::string description = backend_->description();
  std::cout << "[ device   ] " << description << "\n";
  EXPECT_NE(description.find(", driver "), std::string::npos) << description;
  EXPECT_EQ(description.rfind("CUDA device ", 0), std::string::npos) << "no device name";
}

TEST_F(CudaAsyncBackendTest, ImagesMatchTheCpuOverManySeeds) {
  const ContextId ctx = backend_->createContext();
  for (uint32_t seed = 0; seed < 24; ++seed) {
    const Scene s{17 + seed * 5,
                  9 + seed * 3,
                  seed % 17,
                  1 + seed % 9,
                  seed,
                  seed * 7,
                  {{1 + seed * 11 % raster::kMaxTriangles, seed, 0}, {5, seed + 100, 0}}};
    expectSameImage(renderThrough(*backend_, ctx, s), renderOnCpu(s), s);
  }
  backend_->destroyContext(ctx);
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 0}));
}

TEST_F(CudaAsyncBackendTest, CorruptXorGoesIntoEveryPixelOfTheLaunch) {
  const ContextId ctx = backend_->createContext();
  const Scene s{33, 31, 2, 4, 3, 3, {{6, 3, 0x00ff00ffU}}};
  expectSameImage(renderThrough(*backend_, ctx, s), renderOnCpu(s), s);
  backend_->destroyContext(ctx);
}

TEST_F(CudaAsyncBackendTest, SeveralContextsAtOnceEachWithItsOwnStreamAndPool) {
  constexpr uint32_t kContexts = 4;
  std::vector<ContextId> contexts;
  std::vector<Scene> scenes;
  std::vector<std::unique_ptr<SceneBuffers>> buffers;
  for (uint32_t i = 0; i < kContexts; ++i) {
    contexts.push_back(backend_->createContext());
    scenes.push_back(Scene{40 + 7 * i,
                           30 + 5 * i,
                           i * 5,
                           3 + i,
                           i,
                           50 + i,
                           {{16, 300 + i, 0}, {200, 400 + i, 0}, {3, 500 + i, i}}});
    buffers.push_back(std::make_unique<SceneBuffers>(*backend_, contexts[i], scenes[i]));
  }
  for (uint32_t i = 0; i < kContexts; ++i)
    enqueueScene(*backend_, contexts[i], *buffers[i], scenes[i]);
  for (uint32_t i = kContexts; i-- > 0;) {
    expectSameImage(readImage(*backend_, contexts[i], *buffers[i], scenes[i]),
                    renderOnCpu(scenes[i]), scenes[i]);
  }
  buffers.clear();
  for (ContextId ctx : contexts)
    backend_->destroyContext(ctx);
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 0}));
}

TEST_F(CudaAsyncBackendTest, MemoryInUseCountsWhatIsHeldAndAFreeAfterDestroyIsValid) {
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 0}));
  const ContextId a = backend_->createContext();
  const ContextId b = backend_->createContext();
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 2}));
  const BufferId a1 = backend_->allocBuffer(a, 1);
  const BufferId a2 = backend_->allocBuffer(a, 256);
  const BufferId b1 = backend_->allocBuffer(b, 1 << 20);
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{1 + 256 + (1 << 20), 3, 2}));
  backend_->freeBuffer(a2);
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{1 + (1 << 20), 2, 2}));
  backend_->destroyContext(b);
  // b1 outlives its context and still owes its free, which is valid here.
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{1 + (1 << 20), 2, 1}));
  backend_->freeBuffer(b1);
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{1, 1, 1}));
  backend_->freeBuffer(a1);
  backend_->destroyContext(a);
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 0}));
}

TEST_F(CudaAsyncBackendTest, ABufferKeepsItsContentsPastItsContextsDestroyUntilFreed) {
  const ContextId first = backend_->createContext();
  const Scene s{48, 40, 3, 8, 2, 9, {{32, 7, 0}, {3, 8, 0}}};
  auto buffers = std::make_unique<SceneBuffers>(*backend_, first, s);
  enqueueScene(*backend_, first, *buffers, s);
  const std::vector<uint32_t> before = readImage(*backend_, first, *buffers, s);
  expectSameImage(before, renderOnCpu(s), s);
  backend_->destroyContext(first);
  // A new context's pool must not hand out the outstanding allocations again.
  const ContextId next = backend_->createContext();
  const Scene t{48, 40, 1, 4, 5, 10, {{16, 11, 0}}};
  expectSameImage(renderThrough(*backend_, next, t), renderOnCpu(t), t);
  buffers.reset();  // the frees of the first context's buffers, all valid
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 1}));
  backend_->destroyContext(next);
}

TEST_F(CudaAsyncBackendTest, ThePoolIsReleasedWhenItsLastAllocationIsFreed) {
  const testing::DriverMemory memory;
  constexpr int64_t kBytes = int64_t{1} << 30;
  const int64_t idle = memory.freeBytes();
  const ContextId ctx = backend_->createContext();
  const BufferId buf = backend_->allocBuffer(ctx, kBytes);
  backend_->synchronize(ctx);
  backend_->destroyContext(ctx);
  const int64_t held = memory.freeBytes();
  backend_->freeBuffer(buf);
  const int64_t released = memory.freeBytes();
  std::cout << "[ driver   ] after the destroy of a context holding 1024 MiB, "
            << (idle - held) / (1 << 20) << " MiB stayed held; its free released "
            << (released - held) / (1 << 20) << " MiB\n";
  EXPECT_GE(idle - held, kBytes) << "the destroy released memory still allocated";
  EXPECT_GE(released - held, kBytes) << "the last free did not release the pool";
}

TEST_F(CudaAsyncBackendTest, DriverFailuresNameTheCallAndTheError) {
  const ContextId ctx = backend_->createContext();
  expectDeviceError([&] { backend_->allocBuffer(ctx, uint64_t{1} << 50); }, CallPoint::BufAlloc,
                    "cuMemAllocFromPoolAsync: CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 1}));
  const Scene s{20, 20, 1, 4, 1, 1, {{8, 1, 0}}};
  expectSameImage(renderThrough(*backend_, ctx, s), renderOnCpu(s), s);
  backend_->destroyContext(ctx);
}

TEST_F(CudaAsyncBackendTest, BadHandlesAreDeviceErrorsNamingTheCall) {
  const ContextId ctx = backend_->createContext();
  const ContextId other = backend_->createContext();
  const BufferId small = backend_->allocBuffer(ctx, 64);
  const BufferId foreign = backend_->allocBuffer(other, 64);
  const BufferId freed = backend_->allocBuffer(ctx, 64);
  backend_->freeBuffer(freed);
  const ContextId gone = backend_->createContext();
  backend_->destroyContext(gone);
  std::vector<std::byte> bytes(128);

  expectDeviceError([&] { backend_->freeBuffer(12345); }, CallPoint::BufFree,
                    "cuMemFreeAsync: buffer 12345 is unknown");
  expectDeviceError([&] { backend_->freeBuffer(freed); }, CallPoint::BufFree,
                    "cuMemFreeAsync: buffer " + std::to_string(freed) + " was already freed");
  expectDeviceError([&] { backend_->destroyContext(gone); }, CallPoint::CtxDestroy,
                    "cuMemPoolDestroy: context " + std::to_string(gone) + " was destroyed");
  expectDeviceError([&] { backend_->allocBuffer(gone, 64); }, CallPoint::BufAlloc,
                    "cuMemAllocFromPoolAsync: context");
  expectDeviceError([&] { backend_->synchronize(gone); }, CallPoint::Sync, "cuStreamSynchronize");
  expectDeviceError([&] { backend_->copyToDevice(ctx, small, bytes); }, CallPoint::CopyToDevice,
                    "cuMemcpyHtoDAsync: destination buffer");
  expectDeviceError([&] { backend_->copyToDevice(ctx, foreign, std::span(bytes).first(8)); },
                    CallPoint::CopyToDevice, "belongs to context");
  expectDeviceError([&] { backend_->copyToHost(ctx, small, bytes); }, CallPoint::CopyToHost,
                    "holds 64 bytes, 128 needed");
  RasterLaunch tooBig;
  tooBig.framebuffer = small;
  tooBig.vertices = small;
  tooBig.width = 8;
  tooBig.height = 8;
  tooBig.triangleCount = 1;
  expectDeviceError([&] { backend_->launch(ctx, tooBig); }, CallPoint::Launch,
                    "cuLaunchKernel: framebuffer buffer");

  backend_->freeBuffer(small);
  backend_->freeBuffer(foreign);
  const Scene s{24, 24, 1, 4, 1, 1, {{8, 1, 0}}};
  expectSameImage(renderThrough(*backend_, ctx, s), renderOnCpu(s), s);
  backend_->destroyContext(other);
  backend_->destroyContext(ctx);
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 0}));
}

TEST_F(CudaAsyncBackendTest, WorksBesideACudaBackendInOneProcess) {
  // The cuda backend makes its own contexts current; this one must make the primary one current
  // again on every call.
  const std::unique_ptr<Backend> cuda = makeCudaBackend();
  const ContextId mine = backend_->createContext();
  const ContextId theirs = cuda->createContext();
  const Scene s{32, 32, 2, 4, 1, 3, {{12, 4, 0}}};
  expectSameImage(renderThrough(*backend_, mine, s), renderOnCpu(s), s);
  expectSameImage(renderThrough(*cuda, theirs, s), renderOnCpu(s), s);
  cuda->destroyContext(theirs);
  expectSameImage(renderThrough(*backend_, mine, s), renderOnCpu(s), s);
  backend_->destroyContext(mine);
}

TEST_F(CudaAsyncBackendTest, DestroyingTheBackendReleasesWhatIsLeft) {
  const testing::DriverMemory memory;
  const int64_t idle = memory.freeBytes();
  {
    const std::unique_ptr<Backend> other = makeCudaAsyncBackend();
    const ContextId live = other->createContext();
    const ContextId destroyed = other->createContext();
    other->allocBuffer(live, int64_t{1} << 29);
    other->allocBuffer(destroyed, int64_t{1} << 29);
    RasterLaunch l;
    l.width = 512;
    l.height = 512;
    l.triangleCount = raster::kMaxTriangles;
    l.framebuffer = other->allocBuffer(live, uint64_t{l.width} * l.height * sizeof(uint32_t));
    l.vertices = other->allocBuffer(live, l.triangleCount * sizeof(raster::Triangle));
    other->copyToDevice(live, l.vertices,
                        bytesOf(makeTriangles({l.triangleCount, 1, 0}, 512, 512)));
    other->launch(live, l);
    other->destroyContext(destroyed);
  }
  // Pools keep a little of their own; a leak of the two 512 MiB buffers would be far more.
  EXPECT_GE(memory.freeBytes(), idle - (int64_t{64} << 20));
  const ContextId ctx = backend_->createContext();
  const Scene s{16, 16, 0, 1, 1, 1, {{8, 1, 0}}};
  expectSameImage(renderThrough(*backend_, ctx, s), renderOnCpu(s), s);
  backend_->destroyContext(ctx);
}

}  // namespace
}  // namespace gpufuzz
