// CudaStreamBackendTests.cpp: what both CUDA backends must do alike on a real device
// (renderer/cuda/CudaStreamBackend.h), each suite binary running it on its own backend: images
// bit-exact against the shared raster math on the CPU and against the sim backend, the queue's
// order, the accounting, driver failures and handle errors named by their call, and the
// backend's destructor releasing what is left. Where the contracts differ (a free after the
// context's destroy), the kind says what is expected.
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "renderer/Raster.h"
#include "renderer/device/DeviceError.h"
#include "renderer/sim/SimBackend.h"
#include "tests/gpu/CudaBackendKinds.h"
#include "tests/gpu/DriverMemory.h"
#include "tests/gpu/GpuScenes.h"

namespace gpufuzz {
namespace {

using namespace gpuscenes;

TEST_P(CudaStreamBackendTest, NamesItselfTheDeviceAndTheDriver) {
  EXPECT_EQ(backend_->name(), kind().name);
  const std::string description = backend_->description();
  std::cout << "[ device   ] " << description << "\n";
  EXPECT_NE(description.find(", driver "), std::string::npos) << description;
  EXPECT_EQ(description.rfind("CUDA device ", 0), std::string::npos) << "no device name";
}

TEST_P(CudaStreamBackendTest, ImagesMatchTheCpuForChosenShapes) {
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

TEST_P(CudaStreamBackendTest, ImagesMatchTheCpuOverManySeeds) {
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
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 0}));
}

TEST_P(CudaStreamBackendTest, ImagesMatchTheSimBackend) {
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

TEST_P(CudaStreamBackendTest, CorruptXorGoesIntoEveryPixelOfTheLaunch) {
  const ContextId ctx = backend_->createContext();
  // No triangles: shadePixel returns the previous value, so every pixel is the old one XORed.
  Scene s{37, 21, 0, 1, 0, 99, {{0, 0, 0x5a5a5a5aU}}};
  // The buffers go before their context: on cuda freeing them after its destroy is an error.
  {
    const SceneBuffers buffers(*backend_, ctx, s);
    enqueueScene(*backend_, ctx, buffers, s);
    std::vector<uint32_t> want = initialImage(s);
    for (uint32_t& p : want) {
      p ^= 0x5a5a5a5aU;
    }
    expectSameImage(readImage(*backend_, ctx, buffers, s), want, s);
  }
  // Over drawn triangles and textures too.
  const Scene drawn{33, 31, 2, 4, 3, 3, {{6, 3, 0x00ff00ffU}}};
  expectSameImage(renderThrough(*backend_, ctx, drawn), renderOnCpu(drawn), drawn);
  backend_->destroyContext(ctx);
}

TEST_P(CudaStreamBackendTest, QueueRunsInOrderAndUploadSourcesAreReusableAtOnce) {
  const ContextId ctx = backend_->createContext();
  // A launch heavy enough to still run while the next upload into its vertex buffer is enqueued.
  const Scene s{1536, 1536, 1, 64, 21, 22, {{1024, 100, 0}, {1024, 200, 0x01020304U}}};
  // The buffers go before their context: on cuda freeing them after its destroy is an error.
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

TEST_P(CudaStreamBackendTest, MemoryInUseCountsWhatIsHeld) {
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
  // b1 outlives its context (on cuda its memory went with it) and still owes its free.
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{1 + (1 << 20), 2, 1}));
  if (kind().freeAfterDestroyIsValid) {
    backend_->freeBuffer(b1);
  } else {
    EXPECT_THROW(backend_->freeBuffer(b1), DeviceError);
  }
  // Counted off either way.
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{1, 1, 1}));
  backend_->freeBuffer(a1);
  backend_->destroyContext(a);
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 0}));
}

TEST_P(CudaStreamBackendTest, SeveralContextsAtOnce) {
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
  // Interleaved: each call makes its own context current (on cuda-async, its own stream).
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

TEST_P(CudaStreamBackendTest, DriverFailuresNameTheCallAndTheError) {
  const ContextId ctx = backend_->createContext();
  if (kind().zeroBytesError != nullptr) {
    expectDeviceError([&] { backend_->allocBuffer(ctx, 0); }, CallPoint::BufAlloc,
                      kind().zeroBytesError);
  }
  expectDeviceError([&] { backend_->allocBuffer(ctx, uint64_t{1} << 50); }, CallPoint::BufAlloc,
                    std::string(kind().allocCall) + ": CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 1}));
  // No failure is sticky.
  const Scene s{20, 20, 1, 4, 1, 1, {{8, 1, 0}}};
  expectSameImage(renderThrough(*backend_, ctx, s), renderOnCpu(s), s);
  backend_->destroyContext(ctx);
}

TEST_P(CudaStreamBackendTest, BadHandlesAreDeviceErrorsNamingTheCall) {
  const std::string freeCall = kind().freeCall;
  const std::string destroyCall = kind().destroyCall;
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
                    freeCall + ": buffer 12345 is unknown");
  expectDeviceError([&] { backend_->freeBuffer(freed); }, CallPoint::BufFree,
                    freeCall + ": buffer " + std::to_string(freed) + " was already freed");
  expectDeviceError([&] { backend_->destroyContext(999); }, CallPoint::CtxDestroy,
                    destroyCall + ": context 999 is unknown");
  expectDeviceError([&] { backend_->destroyContext(gone); }, CallPoint::CtxDestroy,
                    destroyCall + ": context " + std::to_string(gone) + " was destroyed");
  expectDeviceError([&] { backend_->allocBuffer(gone, 64); }, CallPoint::BufAlloc,
                    std::string(kind().allocCall) + ": context");
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

TEST_P(CudaStreamBackendTest, DestroyingTheBackendReleasesWhatIsLeft) {
  const testing::DriverMemory memory;
  const int64_t idle = memory.freeBytes();
  {
    const std::unique_ptr<Backend> other = kind().make(0);
    // Buffers left allocated, in a live context and in a destroyed one, and launches left
    // queued, for the destructor to release.
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
