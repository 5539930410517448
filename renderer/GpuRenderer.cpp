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
  const std::vector<uint32_t> clear(uint64_t{width_} * height_, 0U);
  framebuffer_ = device_.allocBuffer(context_, clear.size() * 4);
  vertices_ = device_.allocBuffer(context_, raster::kMaxTriangles * sizeof(raster::Triangle));
  device_.copyToDevice(context_, framebuffer_, bytesOf(clear));
  device_.synchronize(context_);
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
  for (BufferId texture : textures_)
    device_.freeBuffer(texture);
  textures_.clear();
  textureSize_ = size;
  std::vector<uint32_t> texels(uint64_t{size} * size);
  for (uint32_t t = 0; t < count; ++t) {
    textures_.push_back(device_.allocBuffer(context_, texels.size() * 4));
    for (uint32_t y = 0; y < size; ++y) {
      for (uint32_t x = 0; x < size; ++x)
        texels[uint64_t{y} * size + x] = raster::texel(seed, t, x, y);
    }
    device_.copyToDevice(context_, textures_.back(), bytesOf(texels));
  }
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
  device_.freeBuffer(vertices_);
  device_.freeBuffer(framebuffer_);
}

void GpuRenderer::release() {
  if (released_) return;
  released_ = true;
  if (defenses_.destroyWaits) device_.synchronize(context_);
  if (defenses_.buffersBeforeContext) {
    freeBuffers();
    device_.destroyContext(context_);
  } else {
    device_.destroyContext(context_);
    freeBuffers();
  }
}

}  // namespace gpufuzz
