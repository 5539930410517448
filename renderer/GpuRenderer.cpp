// GpuRenderer.cpp: the renderer and its teardown policies.
#include "renderer/GpuRenderer.h"

#include <cstring>
#include <exception>
#include <iostream>

#include "renderer/Raster.h"

namespace gpufuzz {

namespace {
std::span<const std::byte> bytesOf(const auto& container) {
  return std::as_bytes(std::span(container));
}
}  // namespace

GpuRenderer::GpuRenderer(Device& device, uint32_t width, uint32_t height, TeardownPolicy policy)
    : device_(device), defenses_(defensesOf(policy)), width_(width), height_(height) {
  context_ = device_.createContext();
  // A renderer that could not be made leaves nothing behind: a failed allocation or upload left
  // the context and the first buffer allocated.
  try {
    const std::vector<uint32_t> clear(uint64_t{width_} * height_, 0U);
    framebuffer_ = device_.allocBuffer(context_, clear.size() * 4);
    vertices_ = device_.allocBuffer(context_, raster::kMaxTriangles * sizeof(raster::Triangle));
    device_.copyToDevice(context_, framebuffer_, bytesOf(clear));
    device_.synchronize(context_);
  } catch (const DeviceError&) {
    releaseAfterFailure();
    throw;
  }
}

GpuRenderer::~GpuRenderer() {
  if (released_) return;
  try {
    release();
  } catch (const std::exception& e) {
    std::cerr << "gpufuzz: renderer teardown failed: " << e.what() << '\n';
  }
}

void GpuRenderer::draw(uint32_t triangles, uint32_t seed) {
  std::vector<raster::Triangle> list(triangles);
  for (uint32_t i = 0; i < triangles; ++i) {
    list[i] = raster::makeTriangle(seed, i, width_, height_);
  }
  device_.copyToDevice(context_, vertices_, bytesOf(list));
  RasterLaunch launch;
  launch.framebuffer = framebuffer_;
  launch.vertices = vertices_;
  launch.textureCount = static_cast<uint32_t>(textures_.size());
  for (uint32_t i = 0; i < launch.textureCount; ++i)
    launch.textures[i] = textures_[i];
  launch.textureSize = textureSize_;
  launch.width = width_;
  launch.height = height_;
  launch.triangleCount = triangles;
  device_.launch(context_, launch);
}

void GpuRenderer::sync() {
  device_.synchronize(context_);
}

void GpuRenderer::setTextures(uint32_t count, uint32_t size, uint32_t seed) {
  // Replacing a resource and tearing the renderer down are two different lifetimes: queued draws
  // still sample the old textures, so wait for them before releasing.
  if (defenses_.textureReplaceWaits) device_.synchronize(context_);
  // The new set is made before the old one goes, so a failed replacement changes nothing a later
  // draw samples: half a set, or none, drew other pixels than either set would.
  std::vector<BufferId> made;
  try {
    std::vector<uint32_t> texels(uint64_t{size} * size);
    for (uint32_t t = 0; t < count; ++t) {
      made.push_back(device_.allocBuffer(context_, texels.size() * 4));
      for (uint32_t y = 0; y < size; ++y) {
        for (uint32_t x = 0; x < size; ++x)
          texels[uint64_t{y} * size + x] = raster::texel(seed, t, x, y);
      }
      device_.copyToDevice(context_, made.back(), bytesOf(texels));
    }
  } catch (const DeviceError&) {
    // The textures made so far may still be uploading: Vulkan forbids destroying a buffer a
    // pending copy uses.
    if (!made.empty()) waitQuietly();
    for (const BufferId texture : made)
      device_.freeBuffer(texture);
    throw;
  }
  for (BufferId texture : textures_)
    device_.freeBuffer(texture);
  textures_ = std::move(made);
  textureSize_ = size;
}

std::vector<uint32_t> GpuRenderer::readBack() {
  std::vector<uint32_t> pixels(uint64_t{width_} * height_);
  device_.copyToHost(context_, framebuffer_, std::as_writable_bytes(std::span(pixels)));
  return pixels;
}

void GpuRenderer::freeBuffers() {
  for (BufferId texture : textures_)
    device_.freeBuffer(texture);
  textures_.clear();
  if (vertices_ != 0) device_.freeBuffer(vertices_);
  if (framebuffer_ != 0) device_.freeBuffer(framebuffer_);
  vertices_ = framebuffer_ = 0;
}

void GpuRenderer::releaseInOrder() {
  if (defenses_.buffersBeforeContext) {
    freeBuffers();
    device_.destroyContext(context_);
  } else {
    device_.destroyContext(context_);
    freeBuffers();
  }
}

bool GpuRenderer::waitQuietly() {
  try {
    device_.synchronize(context_);
    return true;
  } catch (const DeviceError&) {
    return false;
  }
}

void GpuRenderer::releaseAfterFailure() {
  released_ = true;
  // One more wait first: a wait that failed once, out of host memory say, leaves the work
  // queued, and on Vulkan a buffer in use by queued work cannot be destroyed. A lost device
  // fails it again, and then its objects may be destroyed at once.
  waitQuietly();
  try {
    releaseInOrder();
  } catch (const DeviceError& e) {
    std::cerr << "gpufuzz: renderer release after a failure failed too: " << e.what() << '\n';
  }
}

void GpuRenderer::release() {
  if (released_) return;
  released_ = true;
  // A wait that failed still releases everything: the error is the teardown's, the memory is
  // not kept for it.
  if (defenses_.destroyWaits) {
    try {
      device_.synchronize(context_);
    } catch (const DeviceError&) {
      releaseAfterFailure();
      throw;
    }
  }
  releaseInOrder();
}

}  // namespace gpufuzz
