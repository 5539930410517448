// VulkanBackendTest.cpp: the vulkan backend on lavapipe (or whatever GPUFUZZ_VULKAN_DEVICE names)
// under the Khronos validation layer: images bit-exact against the reference model, the Backend
// contract, and each broken teardown order reported by the layer as InvalidUse naming its VUID,
// before the call could do harm. Without the loader, a device or the layer every test fails: a
// suite that skipped would look like a pass.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "model/renderer/ReferenceModel.h"
#include "renderer/GpuRenderer.h"
#include "renderer/Raster.h"
#include "renderer/device/Device.h"
#include "renderer/device/DeviceError.h"
#include "renderer/vulkan/VulkanBackend.h"

namespace gpufuzz {
namespace {

BackendOptions options(bool validation) {
  BackendOptions o;
  if (const char* device = std::getenv("GPUFUZZ_VULKAN_DEVICE")) o.device = device;
  o.validation = validation;
  return o;
}

std::unique_ptr<Backend> vulkan(bool validation = true) {
  return makeVulkanBackend(options(validation));
}

std::vector<uint32_t> modelImage(uint32_t w, uint32_t h,
                                 const std::vector<std::pair<uint32_t, uint32_t>>& draws,
                                 uint32_t texCount = 0, uint32_t texSize = 0,
                                 uint32_t texSeed = 0) {
  std::vector<uint32_t> image(uint64_t{w} * h, 0U);
  for (auto [triangles, seed] : draws)
    drawInto(image, w, h, triangles, seed, texCount, texSize, texSeed);
  return image;
}

/// Runs `body` and returns the InvalidUse it threw; fails the test when it threw none.
template <typename Body>
std::string invalidUseOf(Body body) {
  try {
    body();
  } catch (const InvalidUse& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidUse";
  return "";
}

TEST(VulkanBackend, DescribesDeviceDriverAndLayer) {
  const auto backend = vulkan();
  EXPECT_EQ(backend->name(), "vulkan");
  const std::string text = backend->description();
  EXPECT_NE(text.find("driver"), std::string::npos) << text;
  EXPECT_NE(text.find("validation layer 1."), std::string::npos) << text;
  EXPECT_NE(vulkan(false)->description().find("validation off"), std::string::npos);
}

TEST(VulkanBackend, ImagesMatchTheModel) {
  Device device(vulkan());
  for (auto [w, h] :
       {std::pair{37U, 23U}, std::pair{1U, 1U}, std::pair{64U, 64U}, std::pair{200U, 9U}}) {
    GpuRenderer r(device, w, h, TeardownPolicy::Shipped);
    EXPECT_EQ(r.readBack(), modelImage(w, h, {}));
    r.draw(12, 5);
    r.draw(1, 99);
    r.draw(300, 4000000000U);
    const auto image = r.readBack();
    EXPECT_EQ(image, modelImage(w, h, {{12, 5}, {1, 99}, {300, 4000000000U}})) << w << "x" << h;
    r.release();
  }
  EXPECT_EQ(device.memoryInUse(), MemoryInUse{});
}

TEST(VulkanBackend, TexturedDrawsMatchTheModel) {
  Device device(vulkan());
  GpuRenderer r(device, 64, 48, TeardownPolicy::Shipped);
  // Power-of-two and odd sizes, one texture and all sixteen, sets replaced between draws.
  const std::vector<std::vector<uint32_t>> sets = {{3, 17, 42}, {16, 8, 7}, {1, 1, 0}, {5, 33, 9}};
  std::vector<uint32_t> model(64 * 48, 0U);  // the model's image of the same draws
  for (const auto& set : sets) {
    r.setTextures(set[0], set[1], set[2]);
    r.draw(40, set[2] + 1);
    r.draw(1024, set[2] + 2);
    drawInto(model, 64, 48, 40, set[2] + 1, set[0], set[1], set[2]);
    drawInto(model, 64, 48, 1024, set[2] + 2, set[0], set[1], set[2]);
    EXPECT_EQ(r.readBack(), model) << set[0] << " textures of " << set[1];
  }
  r.release();
  EXPECT_EQ(device.memoryInUse(), MemoryInUse{});
}

TEST(VulkanBackend, CorruptedLaunchXorsEveryPixel) {
  const auto backend = vulkan();
  const ContextId ctx = backend->createContext();
  const BufferId fb = backend->allocBuffer(ctx, 5 * 3 * 4);
  const BufferId tris = backend->allocBuffer(ctx, 48);
  std::vector<uint32_t> pixels(15, 0x01020304U);
  backend->copyToDevice(ctx, fb, std::as_bytes(std::span(pixels)));
  RasterLaunch l;
  l.framebuffer = fb;
  l.vertices = tris;
  l.width = 5;
  l.height = 3;
  l.corruptXor = 0x80000001U;
  backend->launch(ctx, l);
  std::vector<uint32_t> back(15);
  backend->copyToHost(ctx, fb, std::as_writable_bytes(std::span(back)));
  EXPECT_EQ(back, std::vector<uint32_t>(15, 0x01020304U ^ 0x80000001U));
  backend->freeBuffer(fb);
  backend->freeBuffer(tris);
  backend->destroyContext(ctx);
  EXPECT_EQ(backend->memoryInUse(), MemoryInUse{});
}

TEST(VulkanBackend, AccountsForBuffersAndDevices) {
  const auto backend = vulkan();
  const ContextId a = backend->createContext();
  const ContextId b = backend->createContext();
  const BufferId x = backend->allocBuffer(a, 100);
  const BufferId y = backend->allocBuffer(b, 7);
  EXPECT_EQ(backend->memoryInUse(), (MemoryInUse{107, 2, 2}));
  EXPECT_THROW(backend->copyToHost(a, y, {}), DeviceError);  // y belongs to b
  backend->freeBuffer(x);
  EXPECT_THROW(backend->freeBuffer(x), DeviceError);
  backend->freeBuffer(y);
  backend->destroyContext(a);
  EXPECT_THROW(backend->synchronize(a), DeviceError);
  backend->destroyContext(b);
  EXPECT_EQ(backend->memoryInUse(), MemoryInUse{});
}

/// A draw of `r` samples its textures, and no-texture-wait replaces them (freeing the old ones)
/// at once: invalid before the free. Whether or not the draw is done by then, the layer counts it
/// pending (no fence was looked at): the report never depends on timing. It skipped the destroy,
/// so the backend goes away cleanly.
void expectFreeWhileADrawSamplesIsInvalid(GpuRenderer& r, uint32_t drawSeed, uint32_t textureSeed) {
  r.draw(64, drawSeed);
  const std::string what = invalidUseOf([&] { r.setTextures(2, 64, textureSeed); });
  EXPECT_NE(what.find("vkDestroyBuffer: VUID-vkDestroyBuffer-buffer-00922"), std::string::npos)
      << what;
  r.abandon();
}

TEST(VulkanBackend, FreeWhileADrawSamplesIsInvalidBeforeTheFree) {
  Device device(vulkan());
  GpuRenderer r(device, 64, 64, TeardownPolicy::NoTextureWait);
  r.setTextures(2, 64, 1);
  expectFreeWhileADrawSamplesIsInvalid(r, 3, 2);
}

TEST(VulkanBackend, FreeWhileAnUploadIsPendingIsInvalidBeforeTheFree) {
  // The layer misses this one (corpus/runtimes/vulkan-layer-copy-in-use.md) and lavapipe then
  // crashes in its queue thread: the backend reports it itself, before the call.
  const auto backend = vulkan();
  const ContextId ctx = backend->createContext();
  const std::vector<std::byte> texels(1 << 20);
  const BufferId texture = backend->allocBuffer(ctx, texels.size());
  backend->copyToDevice(ctx, texture, texels);
  const std::string what = invalidUseOf([&] { backend->freeBuffer(texture); });
  EXPECT_NE(what.find("VUID-vkDestroyBuffer-buffer-00922"), std::string::npos) << what;
  EXPECT_NE(what.find("buffer " + std::to_string(texture)), std::string::npos) << what;
}

TEST(VulkanBackend, PendingUploadsNeverShareStagingMemory) {
  // A context reuses staging memory once a wait has shown its copy complete: uploads still pending
  // must each keep their own, or a later one would overwrite what an earlier one copies. A long
  // draw submitted first keeps them pending (the queue runs in order).
  const auto backend = vulkan();
  const ContextId ctx = backend->createContext();
  constexpr uint32_t kSide = 128;
  const BufferId fb = backend->allocBuffer(ctx, kSide * kSide * 4);
  const BufferId tris = backend->allocBuffer(ctx, raster::kMaxTriangles * sizeof(raster::Triangle));
  std::vector<raster::Triangle> list(raster::kMaxTriangles);
  for (uint32_t i = 0; i < raster::kMaxTriangles; ++i)
    list[i] = raster::makeTriangle(7, i, kSide, kSide);
  backend->copyToDevice(ctx, tris, std::as_bytes(std::span(list)));
  RasterLaunch draw;
  draw.framebuffer = fb;
  draw.vertices = tris;
  draw.width = kSide;
  draw.height = kSide;
  draw.triangleCount = raster::kMaxTriangles;
  constexpr uint32_t kWords = 64;
  std::vector<BufferId> buffers;
  const auto upload = [&](uint32_t i) {
    const std::vector<uint32_t> words(kWords, 0x1000U + i);
    buffers.push_back(backend->allocBuffer(ctx, kWords * 4));
    backend->copyToDevice(ctx, buffers.back(), std::as_bytes(std::span(words)));
  };
  backend->launch(ctx, draw);
  for (uint32_t i = 0; i < 8; ++i)
    upload(i);
  backend->synchronize(ctx);  // their staging memory, command buffers and fences go idle
  backend->launch(ctx, draw);
  for (uint32_t i = 8; i < 24; ++i)
    upload(i);  // the first eight reuse them, the rest are new
  for (uint32_t i = 0; i < buffers.size(); ++i) {
    std::vector<uint32_t> back(kWords);
    backend->copyToHost(ctx, buffers[i], std::as_writable_bytes(std::span(back)));
    EXPECT_EQ(back, std::vector<uint32_t>(kWords, 0x1000U + i)) << "buffer " << i;
  }
  for (BufferId b : buffers)
    backend->freeBuffer(b);
  backend->freeBuffer(fb);
  backend->freeBuffer(tris);
  backend->destroyContext(ctx);
  EXPECT_EQ(backend->memoryInUse(), MemoryInUse{});
}

TEST(VulkanBackend, ReusedSubmissionsStillShowAFreeWhileADrawSamples) {
  // The same misuse as above, once the context runs on reused command buffers, fences,
  // descriptor sets and staging memory: the layer must still see the draw pending.
  Device device(vulkan());
  GpuRenderer r(device, 64, 64, TeardownPolicy::NoTextureWait);
  r.setTextures(2, 64, 1);
  r.draw(64, 3);
  r.sync();
  r.draw(64, 4);
  r.sync();
  r.setTextures(2, 64, 2);  // the queue is idle: no misuse yet
  expectFreeWhileADrawSamplesIsInvalid(r, 5, 3);
}

TEST(VulkanBackend, ReleaseWithoutSyncIsInvalid) {
  Device device(vulkan());
  auto r = std::make_unique<GpuRenderer>(device, 64, 64, TeardownPolicy::NoDestroySync);
  r->draw(64, 3);
  const std::string what = invalidUseOf([&] { r->release(); });
  EXPECT_NE(what.find("VUID-vkDestroyBuffer-buffer-00922"), std::string::npos) << what;
  r->abandon();
}

TEST(VulkanBackend, DeviceDestroyedWithLiveBuffersIsInvalid) {
  const auto backend = vulkan();
  const ContextId ctx = backend->createContext();
  backend->allocBuffer(ctx, 64);
  const std::string what = invalidUseOf([&] { backend->destroyContext(ctx); });
  // The rule is VUID-vkDestroyDevice-device-00378 in the layer 1.3.239 (Debian 12) and
  // VUID-vkDestroyDevice-device-05137 in 1.4.309 (Debian 13, tools/runtime-root): either names it.
  EXPECT_TRUE(what.find("vkDestroyDevice: VUID-vkDestroyDevice-device-00378") !=
                  std::string::npos ||
              what.find("vkDestroyDevice: VUID-vkDestroyDevice-device-05137") != std::string::npos)
      << what;
  // From then on nothing more reaches Vulkan.
  EXPECT_THROW(backend->createContext(), DeviceError);
}

TEST(VulkanBackend, BufferOutlivingItsDeviceIsAnErrorNamingIt) {
  const auto backend = vulkan(false);  // without the layer the destroy goes through
  const ContextId ctx = backend->createContext();
  const BufferId buf = backend->allocBuffer(ctx, 64);
  backend->destroyContext(ctx);
  try {
    backend->freeBuffer(buf);
    ADD_FAILURE() << "freeing a buffer of a destroyed device succeeded";
  } catch (const InvalidUse& e) {
    ADD_FAILURE() << "not a validation error: " << e.what();
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("buffer " + std::to_string(buf) + " outlived its device"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(backend->memoryInUse(), MemoryInUse{});
}

TEST(VulkanBackend, ShippedTeardownIsCleanUnderValidation) {
  Device device(vulkan());
  for (int i = 0; i < 3; ++i) {
    GpuRenderer r(device, 32, 32, TeardownPolicy::Shipped);
    r.setTextures(4, 16, static_cast<uint32_t>(i));
    r.draw(500, 1);
    r.setTextures(1, 8, 2);
    r.draw(500, 2);
    r.release();  // with draws still queued
  }
  EXPECT_EQ(device.memoryInUse(), MemoryInUse{});
}

TEST(VulkanBackend, UnknownDeviceIsUnavailableAndNamesTheDevices) {
  BackendOptions o = options(true);
  o.device = "no-such-device";
  try {
    makeVulkanBackend(o);
    ADD_FAILURE() << "a backend on no device";
  } catch (const DeviceUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-device"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpufuzz
