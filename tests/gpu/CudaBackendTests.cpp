// CudaBackendTests.cpp: the cuda backend on a real device. Images must be bit-exact against the
// shared raster math evaluated on the CPU; the queue, accounting and lifecycle errors must follow
// the Backend contract. Without a usable CUDA device every test fails: a GPU run that skipped
// would look like a pass.
#include <gtest/gtest.h>

#include <cuda.h>

#include <cstring>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "renderer/Raster.h"
#include "renderer/cuda/CudaBackend.h"
#include "renderer/cuda/CudaDriver.h"
#include "renderer/device/DeviceError.h"
#include "renderer/sim/SimBackend.h"
#include "tests/gpu/DriverMemory.h"
#include "tests/gpu/GpuScenes.h"

namespace gpufuzz {
namespace {

using namespace gpuscenes;

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      backend_ = makeCudaBackend();
    } catch (const DeviceUnavailable& e) {
      FAIL() << "these tests need a usable CUDA device: " << e.what();
    }
  }

  std::unique_ptr<Backend> backend_;
};

TEST_F(CudaBackendTest, ImagesMatchTheCpuForChosenShapes) {
  const ContextId ctx = backend_->createContext();
  // Sizes on and off the 16x16 block, texture counts 0, 1, some and 16, texture sizes from a
  // single texel to 2048.
  const std::vector<Draw> draws = {{1, 11, 0}, {4, 12, 0}, {64, 13, 0}, {1024, 14, 0}};
  std::vector<Scene> scenes = {
      {1, 1, 0, 1, 0, 1, draws},        {16, 16, 1, 1, 3, 2, draws},
      {17, 15, 1, 7, 4, 3, draws},      {64, 64, 16, 32, 5, 4, draws},
      {100, 37, 3, 5, 6, 5, draws},     {3, 257, 16, 1, 7, 6, draws},
      {257, 3, 2, 64, 8, 7, draws},     {128, 128, 16, 64, 9, 8, draws},
      {33, 33, 1, 2048, 10, 9, draws},  {250, 190, 2, 2048, 11, 10, draws},
      {48, 80, 16, 129, 12, 11, draws}, {1, 300, 0, 1, 13, 12, draws},
  };
  for (const Scene& s : scenes) {
    SCOPED_TRACE(s.label());
    expectSameImage(renderThrough(*backend_, ctx, s), renderOnCpu(s), s);
  }
  backend_->destroyContext(ctx);
}

TEST_F(CudaBackendTest, ImagesMatchTheCpuOverManySeeds) {
  const ContextId ctx = backend_->createContext();
  for (uint32_t seed = 0; seed < 150; ++seed) {
    const auto pick = [seed](uint32_t salt, uint32_t bound) {
      return raster::hash3(seed, salt, 0x5eedU) % bound;
    };
    Scene s;
    s.width = 1 + pick(1, 150);
    s.height = 1 + pick(2, 150);
    s.textureCount = pick(3, 4) == 0 ? 0 : 1 + pick(4, raster::kMaxTextures);
    s.textureSize = 1 + pick(5, 200);
    s.textureSeed = pick(6, 1U << 31);
    s.imageSeed = seed;
    const uint32_t drawCount = 1 + pick(7, 3);
    for (uint32_t d = 0; d < drawCount; ++d) {
      const uint32_t triangles =
          pick(8 + d, 2) == 0 ? 1 + pick(20 + d, 16) : 1 + pick(30 + d, raster::kMaxTriangles);
      const uint32_t corruptXor = pick(40 + d, 4) == 0 ? 0x5a5a5a5aU : 0U;
      s.draws.push_back({triangles, raster::hash3(seed, d, 0xd4a3U), corruptXor});
    }
    SCOPED_TRACE(s.label());
    expectSameImage(renderThrough(*backend_, ctx, s), renderOnCpu(s), s);
    if (HasFailure()) break;
  }
  backend_->destroyContext(ctx);
}

TEST_F(CudaBackendTest, ImagesMatchTheSimBackend) {
  // The same calls through the Backend interface on both backends give the same bytes.
  const std::unique_ptr<Backend> sim = makeSimBackend();
  const ContextId cudaCtx = backend_->createContext();
  const ContextId simCtx = sim->createContext();
  const std::vector<Scene> scenes = {
      {1, 1, 0, 1, 0, 1, {{3, 1, 0}}},
      {31, 17, 16, 9, 2, 3, {{1024, 4, 0}, {5, 6, 0x5a5a5a5aU}, {100, 7, 0}}},
      {200, 120, 1, 2048, 8, 9, {{700, 10, 0}}},
      {64, 64, 0, 1, 11, 12, {{0, 0, 0x5a5a5a5aU}, {64, 13, 0}}},
  };
  for (const Scene& s : scenes) {
    SCOPED_TRACE(s.label());
    expectSameImage(renderThrough(*backend_, cudaCtx, s), renderThrough(*sim, simCtx, s), s);
  }
  sim->destroyContext(simCtx);
  backend_->destroyContext(cudaCtx);
}

TEST_F(CudaBackendTest, CorruptXorGoesIntoEveryPixelOfTheLaunch) {
  const ContextId ctx = backend_->createContext();
  // No triangles: shadePixel returns the previous value, so every pixel is the old one XORed.
  Scene s{37, 21, 0, 1, 0, 99, {{0, 0, 0x5a5a5a5aU}}};
  // The buffers go before their context: freeing them after its destroy is an error.
  {
    const SceneBuffers buffers(*backend_, ctx, s);
    enqueueScene(*backend_, ctx, buffers, s);
    std::vector<uint32_t> want = initialImage(s);
    for (uint32_t& p : want) {
      p ^= 0x5a5a5a5aU;
    }
    expectSameImage(readImage(*backend_, ctx, buffers, s), want, s);
  }
  backend_->destroyContext(ctx);
}

TEST_F(CudaBackendTest, QueueRunsInOrderAndUploadSourcesAreReusableAtOnce) {
  const ContextId ctx = backend_->createContext();
  // A launch heavy enough to still run while the next upload into its vertex buffer is enqueued.
  const Scene s{1536, 1536, 1, 64, 21, 22, {{1024, 100, 0}, {1024, 200, 0x01020304U}}};
  // The buffers go before their context: freeing them after its destroy is an error.
  {
    const SceneBuffers buffers(*backend_, ctx, s);
    backend_->copyToDevice(ctx, buffers.framebuffer, bytesOf(initialImage(s)));
    const auto textures = makeTextures(s);
    backend_->copyToDevice(ctx, buffers.textures[0], bytesOf(textures[0]));

    std::vector<raster::Triangle> upload = makeTriangles(s.draws[0], s.width, s.height);
    backend_->copyToDevice(ctx, buffers.vertices, bytesOf(upload));
    // Overwritten at once: the backend must have taken what it needed.
    upload = makeTriangles(s.draws[1], s.width, s.height);
    backend_->launch(ctx, buffers.launchOf(s, s.draws[0]));
    backend_->copyToDevice(ctx, buffers.vertices, bytesOf(upload));
    std::memset(upload.data(), 0xff, upload.size() * sizeof(raster::Triangle));
    backend_->launch(ctx, buffers.launchOf(s, s.draws[1]));
    const std::vector<uint32_t> got = readImage(*backend_, ctx, buffers, s);

    // The whole image on the CPU would take seconds: check a scattering of pixels.
    const std::vector<uint32_t> initial = initialImage(s);
    const auto first = makeTriangles(s.draws[0], s.width, s.height);
    const auto second = makeTriangles(s.draws[1], s.width, s.height);
    size_t wrong = 0;
    for (uint32_t k = 0; k < 4096; ++k) {
      const uint32_t x = raster::hash3(k, 1, 77) % s.width;
      const uint32_t y = raster::hash3(k, 2, 77) % s.height;
      const size_t i = size_t{y} * s.width + x;
      uint32_t want = shadeOnCpu(initial[i], first, s.draws[0], s, textures, x, y);
      want = shadeOnCpu(want, second, s.draws[1], s, textures, x, y);
      if (got[i] != want && wrong++ < 5) {
        ADD_FAILURE() << "pixel (" << x << ", " << y << ") is 0x" << std::hex << got[i]
                      << ", expected 0x" << want;
      }
    }
    EXPECT_EQ(wrong, 0U);
  }
  backend_->destroyContext(ctx);
}

TEST_F(CudaBackendTest, MemoryInUseCountsWhatIsHeld) {
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
  // b1 went with its context, but it still owes its free.
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{1 + (1 << 20), 2, 1}));
  EXPECT_THROW(backend_->freeBuffer(b1), DeviceError);
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{1, 1, 1}));
  backend_->freeBuffer(a1);
  backend_->destroyContext(a);
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 0}));
}

TEST_F(CudaBackendTest, SeveralContextsAtOnce) {
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
  EXPECT_EQ(backend_->memoryInUse().contexts, kContexts);
  // Interleaved: each call makes its own context current.
  for (uint32_t i = 0; i < kContexts; ++i) {
    enqueueScene(*backend_, contexts[i], *buffers[i], scenes[i]);
  }
  for (uint32_t i : {2U, 0U, 3U, 1U}) {
    SCOPED_TRACE(scenes[i].label());
    expectSameImage(readImage(*backend_, contexts[i], *buffers[i], scenes[i]),
                    renderOnCpu(scenes[i]), scenes[i]);
  }
  // Destroying one leaves the others intact.
  buffers[1].reset();
  backend_->destroyContext(contexts[1]);
  for (uint32_t i : {3U, 0U, 2U}) {
    backend_->synchronize(contexts[i]);
    expectSameImage(readImage(*backend_, contexts[i], *buffers[i], scenes[i]),
                    renderOnCpu(scenes[i]), scenes[i]);
    buffers[i].reset();
    backend_->destroyContext(contexts[i]);
  }
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 0}));
}

/// Buffers in a fresh context, filled with a pattern, that must come through an orphan's free
/// untouched.
struct Bystanders {
  Backend& backend;
  ContextId ctx;
  std::vector<BufferId> ids;
  std::vector<std::vector<uint32_t>> contents;

  Bystanders(Backend& b, ContextId c, const std::vector<uint64_t>& sizes) : backend(b), ctx(c) {
    for (uint64_t bytes : sizes) {
      ids.push_back(backend.allocBuffer(ctx, bytes));
      std::vector<uint32_t> words(bytes / sizeof(uint32_t));
      for (size_t i = 0; i < words.size(); ++i) {
        words[i] = raster::hash3(static_cast<uint32_t>(ids.back()), static_cast<uint32_t>(i), 5);
      }
      backend.copyToDevice(ctx, ids.back(), bytesOf(words));
      contents.push_back(std::move(words));
    }
    backend.synchronize(ctx);
  }
  void expectIntactAndFree() {
    for (size_t k = 0; k < ids.size(); ++k) {
      std::vector<uint32_t> back(contents[k].size());
      backend.copyToHost(ctx, ids[k], writableBytesOf(back));
      EXPECT_EQ(back, contents[k]) << "buffer " << ids[k] << " was damaged";
      backend.freeBuffer(ids[k]);
    }
  }
};

const std::vector<uint64_t> kOrphanSizes = {1, 256, 4096, 1 << 20, 64 << 20};

/// Frees each orphan, expecting DeviceError naming cuMemFree; prints what the driver said.
void freeOrphans(Backend& backend, const std::vector<BufferId>& orphans) {
  for (BufferId buf : orphans) {
    const std::string message =
        expectDeviceError([&] { backend.freeBuffer(buf); }, CallPoint::BufFree, "cuMemFree");
    std::cout << "[ driver   ] free after context destroy: " << message << "\n";
  }
}

TEST_F(CudaBackendTest, FreeAfterContextDestroyIsAnErrorAndTheNextContextWorks) {
  const ContextId first = backend_->createContext();
  std::vector<BufferId> orphans;
  for (uint64_t bytes : kOrphanSizes)
    orphans.push_back(backend_->allocBuffer(first, bytes));
  backend_->destroyContext(first);

  // The next context allocates normally, likely at the addresses just released.
  const ContextId next = backend_->createContext();
  Bystanders bystanders(*backend_, next, kOrphanSizes);
  freeOrphans(*backend_, orphans);
  EXPECT_EQ(backend_->memoryInUse().buffers, kOrphanSizes.size());
  bystanders.expectIntactAndFree();
  const Scene s{40, 40, 2, 8, 1, 2, {{32, 7, 0}}};
  expectSameImage(renderThrough(*backend_, next, s), renderOnCpu(s), s);
  backend_->destroyContext(next);
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 0}));
}

TEST_F(CudaBackendTest, FreeAfterContextDestroyIsAnErrorAcrossBackends) {
  const ContextId first = backend_->createContext();
  std::vector<BufferId> orphans;
  for (uint64_t bytes : kOrphanSizes)
    orphans.push_back(backend_->allocBuffer(first, bytes));
  backend_->destroyContext(first);

  const std::unique_ptr<Backend> other = makeCudaBackend();
  Bystanders bystanders(*other, other->createContext(), kOrphanSizes);
  freeOrphans(*backend_, orphans);
  bystanders.expectIntactAndFree();
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 0}));
  EXPECT_EQ(other->memoryInUse(), (MemoryInUse{0, 0, 1}));
}

TEST_F(CudaBackendTest, FreeAfterContextDestroyCallsTheDriverWhenNothingReusedTheAddress) {
  const ContextId first = backend_->createContext();
  const BufferId lone = backend_->allocBuffer(first, 4096);
  const BufferId beside = backend_->allocBuffer(first, 4096);
  backend_->destroyContext(first);
  // No context current at all.
  std::cout << "[ driver   ] no context alive: "
            << expectDeviceError([&] { backend_->freeBuffer(lone); }, CallPoint::BufFree,
                                 "cuMemFree: CUDA_ERROR_")
            << "\n";
  // Another context current, holding no allocation.
  const ContextId next = backend_->createContext();
  backend_->synchronize(next);
  std::cout << "[ driver   ] another context current: "
            << expectDeviceError([&] { backend_->freeBuffer(beside); }, CallPoint::BufFree,
                                 "cuMemFree: CUDA_ERROR_")
            << "\n";
  backend_->destroyContext(next);
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 0}));
}

TEST_F(CudaBackendTest, DestroyingAContextReturnsItsBuffersMemory) {
  const testing::DriverMemory memory;
  constexpr int64_t kBytes = int64_t{1} << 30;
  const ContextId ctx = backend_->createContext();
  const BufferId buf = backend_->allocBuffer(ctx, kBytes);
  const int64_t held = memory.freeBytes();
  backend_->destroyContext(ctx);
  const int64_t released = memory.freeBytes();
  std::cout << "[ driver   ] free memory rose by " << (released - held) / (1 << 20)
            << " MiB when a context holding 1024 MiB was destroyed\n";
  EXPECT_GE(released - held, kBytes);
  EXPECT_THROW(backend_->freeBuffer(buf), DeviceError);
}

TEST_F(CudaBackendTest, DriverFailuresNameTheCallAndTheError) {
  const ContextId ctx = backend_->createContext();
  expectDeviceError([&] { backend_->allocBuffer(ctx, 0); }, CallPoint::BufAlloc,
                    "cuMemAlloc: CUDA_ERROR_INVALID_VALUE");
  expectDeviceError([&] { backend_->allocBuffer(ctx, uint64_t{1} << 50); }, CallPoint::BufAlloc,
                    "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 1}));
  // Neither failure is sticky.
  const Scene s{20, 20, 1, 4, 1, 1, {{8, 1, 0}}};
  expectSameImage(renderThrough(*backend_, ctx, s), renderOnCpu(s), s);
  backend_->destroyContext(ctx);
}

TEST_F(CudaBackendTest, BadHandlesAreDeviceErrorsNamingTheCall) {
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
                    "cuMemFree: buffer 12345 is unknown");
  expectDeviceError([&] { backend_->freeBuffer(freed); }, CallPoint::BufFree,
                    "cuMemFree: buffer " + std::to_string(freed) + " was already freed");
  expectDeviceError([&] { backend_->destroyContext(999); }, CallPoint::CtxDestroy,
                    "cuCtxDestroy: context 999 is unknown");
  expectDeviceError([&] { backend_->destroyContext(gone); }, CallPoint::CtxDestroy,
                    "cuCtxDestroy: context " + std::to_string(gone) + " was destroyed");
  expectDeviceError([&] { backend_->allocBuffer(gone, 64); }, CallPoint::BufAlloc,
                    "cuMemAlloc: context");
  expectDeviceError([&] { backend_->synchronize(gone); }, CallPoint::Sync, "cuStreamSynchronize");
  expectDeviceError([&] { backend_->copyToDevice(ctx, small, bytes); }, CallPoint::CopyToDevice,
                    "cuMemcpyHtoDAsync: destination buffer");
  expectDeviceError([&] { backend_->copyToDevice(ctx, foreign, std::span(bytes).first(8)); },
                    CallPoint::CopyToDevice, "belongs to context");
  expectDeviceError([&] { backend_->copyToHost(ctx, freed, std::span(bytes).first(8)); },
                    CallPoint::CopyToHost, "cuMemcpyDtoHAsync: source buffer");
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
  RasterLaunch tooManyTextures = tooBig;
  tooManyTextures.width = 4;
  tooManyTextures.height = 4;
  tooManyTextures.textureCount = raster::kMaxTextures + 1;
  expectDeviceError([&] { backend_->launch(ctx, tooManyTextures); }, CallPoint::Launch,
                    "cuLaunchKernel: 17 textures");
  RasterLaunch foreignVertices = tooManyTextures;
  foreignVertices.textureCount = 0;
  foreignVertices.vertices = foreign;
  expectDeviceError([&] { backend_->launch(ctx, foreignVertices); }, CallPoint::Launch,
                    "cuLaunchKernel: vertex buffer");

  // Rejected before reaching the driver: the contexts are still sound.
  backend_->freeBuffer(small);
  backend_->freeBuffer(foreign);
  const Scene s{24, 24, 1, 4, 1, 1, {{8, 1, 0}}};
  expectSameImage(renderThrough(*backend_, ctx, s), renderOnCpu(s), s);
  backend_->destroyContext(other);
  backend_->destroyContext(ctx);
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 0}));
}

TEST_F(CudaBackendTest, DestroyingTheBackendReleasesWhatIsLeft) {
  {
    const std::unique_ptr<Backend> other = makeCudaBackend();
    // Buffers left allocated and launches left queued, for the destructor to release.
    const ContextId ctx = other->createContext();
    RasterLaunch l;
    l.width = 512;
    l.height = 512;
    l.triangleCount = raster::kMaxTriangles;
    l.framebuffer = other->allocBuffer(ctx, uint64_t{l.width} * l.height * sizeof(uint32_t));
    l.vertices = other->allocBuffer(ctx, l.triangleCount * sizeof(raster::Triangle));
    other->copyToDevice(ctx, l.vertices, bytesOf(makeTriangles({l.triangleCount, 1, 0}, 512, 512)));
    other->launch(ctx, l);
    other->launch(ctx, l);
  }
  const ContextId ctx = backend_->createContext();
  const Scene s{16, 16, 0, 1, 1, 1, {{8, 1, 0}}};
  expectSameImage(renderThrough(*backend_, ctx, s), renderOnCpu(s), s);
  backend_->destroyContext(ctx);
}

}  // namespace
}  // namespace gpufuzz
