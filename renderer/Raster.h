// Raster.h: the renderer's image math, integer only, compiled as host code (sim kernel, reference
// model, texture generation) and as device code (the CUDA kernel), so images are bit-exact across
// backends. The per-pixel arithmetic (hashes, triangles, texels, edge tests, shadePixel) is
// RasterCore.h, the one text that the CUDA, OpenCL C and GLSL kernels compile too; this header adds
// the host's whole-image rasterizer, which must agree with it pixel for pixel.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GPUFUZZ_HD __host__ __device__
#else
#define GPUFUZZ_HD
#endif

namespace gpufuzz::raster {

#include "renderer/RasterCore.h"  // IWYU pragma: export

static_assert(sizeof(Triangle) == 48, "Triangle must keep its device layout");

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
    const uint32_t tx0 = texelCoordinate(x0, t.u, size);
    for (int32_t y = y0; y <= y1; ++y) {
      int64_t e0 = row[0], e1 = row[1], e2 = row[2];
      uint32_t* line = image + static_cast<uint64_t>(y) * width;
      const uint32_t ty = texelCoordinate(y, t.v, size);
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
