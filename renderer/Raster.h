// Raster.h: the renderer's image math, integer only, compiled as host code (sim kernel, reference
// model, texture generation) and as device code (the CUDA kernel), so images are bit-exact across
// backends.
//
// A draw rasterizes N pseudo-random triangles, in order, over the framebuffer's current content.
// A covered pixel takes the triangle's colour XOR the texel it samples from texture
// (triangle.texture % textureCount) at ((x + u) mod size, (y + v) mod size); with no textures it
// takes the colour alone. Pixels are RGBA8 packed little-endian in a uint32_t.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GPUFUZZ_HD __host__ __device__
#else
#define GPUFUZZ_HD
#endif

namespace gpufuzz::raster {

inline constexpr uint32_t kMaxTriangles = 1024;
inline constexpr uint32_t kMaxTextures = 16;

/// One triangle as uploaded to the device: 48 bytes, no padding, same layout on host and device.
struct Triangle {
  int32_t x[3];
  int32_t y[3];
  uint32_t color;
  uint32_t texture;
  int32_t u;
  int32_t v;
  uint32_t reserved[2];
};
static_assert(sizeof(Triangle) == 48, "Triangle must keep its device layout");

/// A 32-bit integer hash (lowbias32): well mixed, cheap, identical everywhere.
GPUFUZZ_HD inline uint32_t hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

GPUFUZZ_HD inline uint32_t hash3(uint32_t a, uint32_t b, uint32_t c) {
  return hash32(a ^ hash32(b ^ hash32(c + 0x9e3779b9U)));
}

/// The i-th triangle of a draw with the given seed. Vertices range a quarter of the image beyond
/// each edge, so some triangles are clipped.
GPUFUZZ_HD inline Triangle makeTriangle(uint32_t seed, uint32_t index, uint32_t width,
                                        uint32_t height) {
  Triangle t{};
  const int32_t spanX = static_cast<int32_t>(width + width / 2 + 1);
  const int32_t spanY = static_cast<int32_t>(height + height / 2 + 1);
  for (uint32_t k = 0; k < 3; ++k) {
    t.x[k] = static_cast<int32_t>(hash3(seed, index, 2 * k) % static_cast<uint32_t>(spanX)) -
             static_cast<int32_t>(width / 4);
    t.y[k] = static_cast<int32_t>(hash3(seed, index, 2 * k + 1) % static_cast<uint32_t>(spanY)) -
             static_cast<int32_t>(height / 4);
  }
  t.color = hash3(seed, index, 6) | 0xff000000U;
  t.texture = hash3(seed, index, 7);
  t.u = static_cast<int32_t>(hash3(seed, index, 8) & 0x7ff);
  t.v = static_cast<int32_t>(hash3(seed, index, 9) & 0x7ff);
  return t;
}

/// Texel (x, y) of texture `index` of a set made with `seed`; textures are size x size RGBA8.
GPUFUZZ_HD inline uint32_t texel(uint32_t seed, uint32_t index, uint32_t x, uint32_t y) {
  return hash3(seed ^ (index * 0x85ebca6bU), x, y) & 0x00ffffffU;
}

GPUFUZZ_HD inline int64_t edge(int32_t ax, int32_t ay, int32_t bx, int32_t by, int32_t px,
                               int32_t py) {
  return static_cast<int64_t>(bx - ax) * (py - ay) - static_cast<int64_t>(by - ay) * (px - ax);
}

/// Whether pixel (px, py) is covered: all three edge functions non-negative once the triangle is
/// oriented counter-clockwise; degenerate triangles cover nothing.
GPUFUZZ_HD inline bool covers(const Triangle& t, int32_t px, int32_t py) {
  const int64_t area = edge(t.x[0], t.y[0], t.x[1], t.y[1], t.x[2], t.y[2]);
  if (area == 0) return false;
  const int64_t e0 = edge(t.x[0], t.y[0], t.x[1], t.y[1], px, py);
  const int64_t e1 = edge(t.x[1], t.y[1], t.x[2], t.y[2], px, py);
  const int64_t e2 = edge(t.x[2], t.y[2], t.x[0], t.y[0], px, py);
  if (area > 0) return e0 >= 0 && e1 >= 0 && e2 >= 0;
  return e0 <= 0 && e1 <= 0 && e2 <= 0;
}

/// Reads texels from wherever textures live (device memory, host buffers, or computed).
/// `Sampler` must provide `uint32_t operator()(uint32_t texture, uint32_t x, uint32_t y)`.
template <typename Sampler>
GPUFUZZ_HD inline uint32_t shadePixel(uint32_t previous, const Triangle* triangles,
                                      uint32_t triangleCount, uint32_t textureCount,
                                      uint32_t textureSize, const Sampler& sample, int32_t px,
                                      int32_t py) {
  uint32_t pixel = previous;
  for (uint32_t i = 0; i < triangleCount; ++i) {
    const Triangle& t = triangles[i];
    if (!covers(t, px, py)) continue;
    uint32_t value = t.color;
    if (textureCount > 0) {
      const uint32_t tx = static_cast<uint32_t>(px + t.u) % textureSize;
      const uint32_t ty = static_cast<uint32_t>(py + t.v) % textureSize;
      value ^= sample(t.texture % textureCount, tx, ty);
    }
    pixel = value;
  }
  return pixel;
}

#if !defined(__CUDACC__)
/// Host rasterization of a whole draw into a row-major `width` x `height` image: triangle by
/// triangle, in order, over each one's bounding box clipped to the image, with edge functions
/// stepped incrementally. Every pixel ends as shadePixel() would leave it (the last covering
/// triangle wins; the same edge tests, exact in 64 bits), at a fraction of the cost of testing
/// every triangle at every pixel.
template <typename Sampler>
inline void rasterizeHost(uint32_t* image, uint32_t width, uint32_t height,
                          const Triangle* triangles, uint32_t triangleCount, uint32_t textureCount,
                          uint32_t textureSize, const Sampler& sample) {
  const int32_t w = static_cast<int32_t>(width), h = static_cast<int32_t>(height);
  for (uint32_t i = 0; i < triangleCount; ++i) {
    const Triangle& t = triangles[i];
    const int64_t area = edge(t.x[0], t.y[0], t.x[1], t.y[1], t.x[2], t.y[2]);
    if (area == 0) continue;
    const auto lo = [](int32_t a, int32_t b, int32_t c) {
      return a < b ? (a < c ? a : c) : (b < c ? b : c);
    };
    const auto hi = [](int32_t a, int32_t b, int32_t c) {
      return a > b ? (a > c ? a : c) : (b > c ? b : c);
    };
    const int32_t x0 = lo(t.x[0], t.x[1], t.x[2]) < 0 ? 0 : lo(t.x[0], t.x[1], t.x[2]);
    const int32_t y0 = lo(t.y[0], t.y[1], t.y[2]) < 0 ? 0 : lo(t.y[0], t.y[1], t.y[2]);
    const int32_t x1 = hi(t.x[0], t.x[1], t.x[2]) >= w ? w - 1 : hi(t.x[0], t.x[1], t.x[2]);
    const int32_t y1 = hi(t.y[0], t.y[1], t.y[2]) >= h ? h - 1 : hi(t.y[0], t.y[1], t.y[2]);
    if (x0 > x1 || y0 > y1) continue;
    // Oriented so that inside means all three edge values are >= 0 (negation is exact).
    const int64_t sign = area > 0 ? 1 : -1;
    int64_t step[3];
    int64_t row[3];
    for (int k = 0; k < 3; ++k) {
      const int n = (k + 1) % 3;
      step[k] = -sign * (static_cast<int64_t>(t.y[n]) - t.y[k]);
      row[k] = sign * edge(t.x[k], t.y[k], t.x[n], t.y[n], x0, y0);
    }
    int64_t rowStep[3];
    for (int k = 0; k < 3; ++k) {
      const int n = (k + 1) % 3;
      rowStep[k] = sign * (static_cast<int64_t>(t.x[n]) - t.x[k]);
    }
    // Texture coordinates stepped along with x (no division per pixel).
    const uint32_t texture = textureCount > 0 ? t.texture % textureCount : 0;
    const uint32_t size = textureCount > 0 ? textureSize : 1;
    const uint32_t tx0 = static_cast<uint32_t>(x0 + t.u) % size;
    for (int32_t y = y0; y <= y1; ++y) {
      int64_t e0 = row[0], e1 = row[1], e2 = row[2];
      uint32_t* line = image + static_cast<uint64_t>(y) * width;
      const uint32_t ty = static_cast<uint32_t>(y + t.v) % size;
      uint32_t tx = tx0;
      for (int32_t x = x0; x <= x1; ++x) {
        if ((e0 | e1 | e2) >= 0) {
          line[x] = textureCount > 0 ? t.color ^ sample(texture, tx, ty) : t.color;
        }
        e0 += step[0];
        e1 += step[1];
        e2 += step[2];
        if (++tx == size) tx = 0;
      }
      row[0] += rowStep[0];
      row[1] += rowStep[1];
      row[2] += rowStep[2];
    }
  }
}
#endif

}  // namespace gpufuzz::raster
