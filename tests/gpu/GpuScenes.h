// GpuScenes.h: scenes rendered through a Backend and on the CPU, for the suites of the CUDA
// backends: images must be bit-exact against the shared raster math evaluated on the CPU.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "renderer/Raster.h"
#include "renderer/device/Backend.h"
#include "renderer/device/DeviceError.h"

namespace gpufuzz::gpuscenes {

struct Draw {
  uint32_t triangles = 4;
  uint32_t seed = 0;
  uint32_t corruptXor = 0;
};

/// A framebuffer with known initial content, a texture set, and the draws made over it.
struct Scene {
  uint32_t width = 64;
  uint32_t height = 64;
  uint32_t textureCount = 0;
  uint32_t textureSize = 1;
  uint32_t textureSeed = 0;
  uint32_t imageSeed = 0;
  std::vector<Draw> draws;

  std::string label() const {
    return std::to_string(width) + "x" + std::to_string(height) + ", " +
           std::to_string(textureCount) + " textures of " + std::to_string(textureSize) +
           ", seed " + std::to_string(imageSeed);
  }
};

template <typename T>
inline std::span<const std::byte> bytesOf(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}

template <typename T>
inline std::span<std::byte> writableBytesOf(std::vector<T>& v) {
  return std::as_writable_bytes(std::span(v));
}

inline std::vector<uint32_t> initialImage(const Scene& s) {
  std::vector<uint32_t> image(size_t{s.width} * s.height);
  for (size_t i = 0; i < image.size(); ++i) {
    image[i] = raster::hash3(s.imageSeed, static_cast<uint32_t>(i), 0xabcdefU);
  }
  return image;
}

inline std::vector<std::vector<uint32_t>> makeTextures(const Scene& s) {
  std::vector<std::vector<uint32_t>> textures(s.textureCount);
  for (uint32_t t = 0; t < s.textureCount; ++t) {
    textures[t].resize(size_t{s.textureSize} * s.textureSize);
    for (uint32_t y = 0; y < s.textureSize; ++y) {
      for (uint32_t x = 0; x < s.textureSize; ++x) {
        textures[t][size_t{y} * s.textureSize + x] = raster::texel(s.textureSeed, t, x, y);
      }
    }
  }
  return textures;
}

inline std::vector<raster::Triangle> makeTriangles(const Draw& d, uint32_t width, uint32_t height) {
  std::vector<raster::Triangle> triangles(d.triangles);
  for (uint32_t i = 0; i < d.triangles; ++i) {
    triangles[i] = raster::makeTriangle(d.seed, i, width, height);
  }
  return triangles;
}

/// Reads texels from host copies of the textures the device was given.
struct HostSampler {
  const std::vector<std::vector<uint32_t>>* textures;
  uint32_t size;
  uint32_t operator()(uint32_t texture, uint32_t x, uint32_t y) const {
    return (*textures)[texture][size_t{y} * size + x];
  }
};

/// One pixel after one draw, as the launch contract defines it: every pixel the launch writes,
/// which is all of them, is shadePixel(...) ^ corruptXor.
inline uint32_t shadeOnCpu(uint32_t previous, const std::vector<raster::Triangle>& triangles,
                           const Draw& d, const Scene& s,
                           const std::vector<std::vector<uint32_t>>& textures, uint32_t x,
                           uint32_t y) {
  return raster::shadePixel(previous, triangles.data(), d.triangles, s.textureCount, s.textureSize,
                            HostSampler{&textures, s.textureSize}, static_cast<int32_t>(x),
                            static_cast<int32_t>(y)) ^
         d.corruptXor;
}

inline std::vector<uint32_t> renderOnCpu(const Scene& s) {
  std::vector<uint32_t> image = initialImage(s);
  const auto textures = makeTextures(s);
  for (const Draw& d : s.draws) {
    const auto triangles = makeTriangles(d, s.width, s.height);
    for (uint32_t y = 0; y < s.height; ++y) {
      for (uint32_t x = 0; x < s.width; ++x) {
        uint32_t& pixel = image[size_t{y} * s.width + x];
        pixel = shadeOnCpu(pixel, triangles, d, s, textures, x, y);
      }
    }
  }
  return image;
}

/// The buffers a scene needs on one context, freed on scope exit.
struct SceneBuffers {
  Backend& backend;
  BufferId framebuffer = 0;
  BufferId vertices = 0;
  std::vector<BufferId> textures;

  SceneBuffers(Backend& b, ContextId ctx, const Scene& s) : backend(b) {
    framebuffer = backend.allocBuffer(ctx, uint64_t{s.width} * s.height * sizeof(uint32_t));
    vertices = backend.allocBuffer(ctx, raster::kMaxTriangles * sizeof(raster::Triangle));
    for (uint32_t t = 0; t < s.textureCount; ++t) {
      textures.push_back(
          backend.allocBuffer(ctx, uint64_t{s.textureSize} * s.textureSize * sizeof(uint32_t)));
    }
  }
  ~SceneBuffers() {
    // A failure here is the test's, reported as such rather than ending the whole run.
    try {
      backend.freeBuffer(framebuffer);
      backend.freeBuffer(vertices);
      for (BufferId t : textures) {
        backend.freeBuffer(t);
      }
    } catch (const DeviceError& e) {
      ADD_FAILURE() << "freeing a scene's buffers: " << e.what();
    }
  }
  SceneBuffers(const SceneBuffers&) = delete;
  SceneBuffers& operator=(const SceneBuffers&) = delete;

  RasterLaunch launchOf(const Scene& s, const Draw& d) const {
    RasterLaunch l;
    l.framebuffer = framebuffer;
    l.vertices = vertices;
    for (size_t t = 0; t < textures.size(); ++t)
      l.textures[t] = textures[t];
    l.textureCount = s.textureCount;
    l.textureSize = s.textureSize;
    l.width = s.width;
    l.height = s.height;
    l.triangleCount = d.triangles;
    l.corruptXor = d.corruptXor;
    return l;
  }
};

/// Uploads the initial image and textures and enqueues every draw through one vertex buffer,
/// with no wait in between: only the queue's order makes the result right.
inline void enqueueScene(Backend& backend, ContextId ctx, const SceneBuffers& buffers,
                         const Scene& s) {
  backend.copyToDevice(ctx, buffers.framebuffer, bytesOf(initialImage(s)));
  const auto textures = makeTextures(s);
  for (uint32_t t = 0; t < s.textureCount; ++t) {
    backend.copyToDevice(ctx, buffers.textures[t], bytesOf(textures[t]));
  }
  for (const Draw& d : s.draws) {
    backend.copyToDevice(ctx, buffers.vertices, bytesOf(makeTriangles(d, s.width, s.height)));
    backend.launch(ctx, buffers.launchOf(s, d));
  }
}

inline std::vector<uint32_t> readImage(Backend& backend, ContextId ctx, const SceneBuffers& buffers,
                                       const Scene& s) {
  std::vector<uint32_t> image(size_t{s.width} * s.height);
  backend.copyToHost(ctx, buffers.framebuffer, writableBytesOf(image));
  return image;
}

inline std::vector<uint32_t> renderThrough(Backend& backend, ContextId ctx, const Scene& s) {
  const SceneBuffers buffers(backend, ctx, s);
  enqueueScene(backend, ctx, buffers, s);
  return readImage(backend, ctx, buffers, s);
}

inline void expectSameImage(const std::vector<uint32_t>& got, const std::vector<uint32_t>& want,
                            const Scene& s) {
  ASSERT_EQ(got.size(), want.size()) << s.label();
  size_t wrong = 0;
  size_t first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (wrong++ == 0) first = i;
  }
  EXPECT_EQ(wrong, 0U) << s.label() << ": first wrong pixel (" << first % s.width << ", "
                       << first / s.width << ") is 0x" << std::hex << got[first] << ", expected 0x"
                       << want[first];
}

/// Runs `call`, expecting DeviceError at `point` whose message contains `text`; returns the
/// message.
template <typename Call>
inline std::string expectDeviceError(Call&& call, CallPoint point, std::string_view text) {
  try {
    call();
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.point(), point) << e.what();
    EXPECT_NE(std::string_view(e.what()).find(text), std::string_view::npos)
        << "message: " << e.what() << "\nexpected to contain: " << text;
    return e.what();
  }
  ADD_FAILURE() << "no DeviceError; expected one containing: " << text;
  return {};
}

}  // namespace gpufuzz::gpuscenes
