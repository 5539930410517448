// RasterCore.h: the renderer's raster arithmetic in the common subset of C++ (host and CUDA),
// OpenCL C and GLSL, so that every backend and the reference model compute images from one text
// and cannot drift apart. Integer only; the result is bit-exact wherever it is compiled.
//
// The languages differ in types, casts, qualifiers and how a kernel reaches its buffers; the RC_*
// macros below hide that and nothing else. The text between them must stay in the subset: no
// references, pointers, templates, lambdas, typedefs, C-style or named casts, implicit narrowing;
// write casts as RC_CAST(type, value) and literals with their U suffix.
//
// Who includes it, and what it provides:
// - C++ and CUDA: through renderer/Raster.h only (inside namespace gpufuzz::raster); shadePixel
//   is a template over a sampler, `uint32_t sample(uint32_t texture, uint32_t x, uint32_t y)`.
// - GLSL (glslc, #version 450): define RASTER_BUFFERS as the shader's buffer declarations (they
//   are placed right after Triangle's definition; the triangle list is an array member named
//   `triangles`, std430, whose layout is the host's 48 bytes) and RASTER_SAMPLE(texture, x, y) as
//   an expression reading a texel, then `#include "renderer/RasterCore.h"`. The shader needs
//   GL_EXT_shader_explicit_arithmetic_types_int64 (the device feature shaderInt64).
// - OpenCL C: define RASTER_SAMPLER_PARAM (parameter declarations, each followed by a comma, that
//   shadePixel takes just before px; may be empty) and RASTER_SAMPLE(texture, x, y) reading a
//   texel through them, then include this text (prepend it as a source string, or #include it with
//   -I the source tree). shadePixel takes the triangles as `__global const Triangle*`.
//
// A draw rasterizes N pseudo-random triangles, in order, over the framebuffer's current content.
// A covered pixel takes the triangle's colour XOR the texel it samples from texture
// (triangle.texture % textureCount) at ((x + u) mod size, (y + v) mod size); with no textures it
// takes the colour alone. Pixels are RGBA8 packed little-endian in a uint32_t.
#ifndef GPUFUZZ_RENDERER_RASTER_CORE_H
#define GPUFUZZ_RENDERER_RASTER_CORE_H

#if defined(__OPENCL_VERSION__)
// OpenCL C: C99 casts; fixed-width names for the built-in types.
typedef uint uint32_t;
typedef int int32_t;
typedef long int64_t;
#define RC_FN inline
#define RC_CAST(type, value) ((type)(value))
#define RC_CONST(type, name, value) __constant type name = (value)
#define RC_STRUCT(name) typedef struct name
#define RC_STRUCT_END(name) name
#define RC_TRIANGLE_IN Triangle
#define RC_TRIANGLES_PARAM(name) __global const Triangle *name,
#define RC_SAMPLER_TEMPLATE
#define RC_SAMPLER_PARAM RASTER_SAMPLER_PARAM
#define RC_SAMPLE(texture, x, y) RASTER_SAMPLE(texture, x, y)
#elif defined(VULKAN) || defined(GL_SPIRV)
// GLSL: constructor casts; the triangle list and the texels are the shader's buffers.
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define RC_FN
#define RC_CAST(type, value) type(value)
#define RC_CONST(type, name, value) const type name = (value)
#define RC_STRUCT(name) struct name
#define RC_STRUCT_END(name)
#define RC_TRIANGLE_IN Triangle
#define RC_TRIANGLES_PARAM(name)
#define RC_SAMPLER_TEMPLATE
#define RC_SAMPLER_PARAM
#define RC_SAMPLE(texture, x, y) RASTER_SAMPLE(texture, x, y)
#else
// C++, host and CUDA device code alike.
#define RC_FN GPUFUZZ_HD inline
#define RC_CAST(type, value) static_cast<type>(value)
#define RC_CONST(type, name, value) inline constexpr type name = (value)
#define RC_STRUCT(name) struct name
#define RC_STRUCT_END(name)
#define RC_TRIANGLE_IN const Triangle&
#define RC_TRIANGLES_PARAM(name) const Triangle *name,
#define RC_SAMPLER_TEMPLATE template <typename Sampler>
#define RC_SAMPLER_PARAM const Sampler &sample,
#define RC_SAMPLE(texture, x, y) sample(texture, x, y)
#endif

RC_CONST(uint32_t, kMaxTriangles, 1024U);
RC_CONST(uint32_t, kMaxTextures, 16U);

/// One triangle as uploaded to the device: 48 bytes, no padding, same layout on host and device
/// (std430 in GLSL).
RC_STRUCT(Triangle) {
  int32_t x[3];
  int32_t y[3];
  uint32_t color;
  uint32_t texture;
  int32_t u;
  int32_t v;
  uint32_t reserved[2];
}
RC_STRUCT_END(Triangle);

#if defined(RASTER_BUFFERS)
RASTER_BUFFERS
#endif

/// A 32-bit integer hash (lowbias32): well mixed, cheap, identical everywhere.
RC_FN uint32_t hash32(uint32_t x) {
  x ^= x >> 16U;
  x *= 0x7feb352dU;
  x ^= x >> 15U;
  x *= 0x846ca68bU;
  x ^= x >> 16U;
  return x;
}

RC_FN uint32_t hash3(uint32_t a, uint32_t b, uint32_t c) {
  return hash32(a ^ hash32(b ^ hash32(c + 0x9e3779b9U)));
}

/// The i-th triangle of a draw with the given seed. Vertices range a quarter of the image beyond
/// each edge, so some triangles are clipped.
RC_FN Triangle makeTriangle(uint32_t seed, uint32_t index, uint32_t width, uint32_t height) {
  Triangle t;
  const uint32_t spanX = width + width / 2U + 1U;
  const uint32_t spanY = height + height / 2U + 1U;
  for (uint32_t k = 0U; k < 3U; ++k) {
    t.x[k] = RC_CAST(int32_t, hash3(seed, index, 2U * k) % spanX) - RC_CAST(int32_t, width / 4U);
    t.y[k] =
        RC_CAST(int32_t, hash3(seed, index, 2U * k + 1U) % spanY) - RC_CAST(int32_t, height / 4U);
  }
  t.color = hash3(seed, index, 6U) | 0xff000000U;
  t.texture = hash3(seed, index, 7U);
  t.u = RC_CAST(int32_t, hash3(seed, index, 8U) & 0x7ffU);
  t.v = RC_CAST(int32_t, hash3(seed, index, 9U) & 0x7ffU);
  t.reserved[0] = 0U;
  t.reserved[1] = 0U;
  return t;
}

/// Texel (x, y) of texture `index` of a set made with `seed`; textures are size x size RGBA8.
RC_FN uint32_t texel(uint32_t seed, uint32_t index, uint32_t x, uint32_t y) {
  return hash3(seed ^ (index * 0x85ebca6bU), x, y) & 0x00ffffffU;
}

/// Where texture coordinate `p + offset` falls in a texture of `size` texels (wrapping).
RC_FN uint32_t texelCoordinate(int32_t p, int32_t offset, uint32_t size) {
  return RC_CAST(uint32_t, p + offset) % size;
}

RC_FN int64_t edge(int32_t ax, int32_t ay, int32_t bx, int32_t by, int32_t px, int32_t py) {
  return RC_CAST(int64_t, bx - ax) * RC_CAST(int64_t, py - ay) -
         RC_CAST(int64_t, by - ay) * RC_CAST(int64_t, px - ax);
}

/// Whether pixel (px, py) is covered: all three edge functions non-negative once the triangle is
/// oriented counter-clockwise; degenerate triangles cover nothing.
RC_FN bool covers(RC_TRIANGLE_IN t, int32_t px, int32_t py) {
  const int64_t zero = RC_CAST(int64_t, 0);
  const int64_t area = edge(t.x[0], t.y[0], t.x[1], t.y[1], t.x[2], t.y[2]);
  if (area == zero) return false;
  const int64_t e0 = edge(t.x[0], t.y[0], t.x[1], t.y[1], px, py);
  const int64_t e1 = edge(t.x[1], t.y[1], t.x[2], t.y[2], px, py);
  const int64_t e2 = edge(t.x[2], t.y[2], t.x[0], t.y[0], px, py);
  if (area > zero) return e0 >= zero && e1 >= zero && e2 >= zero;
  return e0 <= zero && e1 <= zero && e2 <= zero;
}

/// Pixel (px, py) once the draw's triangles have been rasterized over `previous`, texels read
/// through the sampler (device memory, host buffers, or computed).
RC_SAMPLER_TEMPLATE
RC_FN uint32_t shadePixel(uint32_t previous, RC_TRIANGLES_PARAM(triangles) uint32_t triangleCount,
                          uint32_t textureCount, uint32_t textureSize, RC_SAMPLER_PARAM int32_t px,
                          int32_t py) {
  uint32_t pixel = previous;
  for (uint32_t i = 0U; i < triangleCount; ++i) {
    RC_TRIANGLE_IN t = triangles[i];
    if (!covers(t, px, py)) continue;
    uint32_t value = t.color;
    if (textureCount > 0U) {
      value ^= RC_SAMPLE(t.texture % textureCount, texelCoordinate(px, t.u, textureSize),
                         texelCoordinate(py, t.v, textureSize));
    }
    pixel = value;
  }
  return pixel;
}

#undef RC_FN
#undef RC_CAST
#undef RC_CONST
#undef RC_STRUCT
#undef RC_STRUCT_END
#undef RC_TRIANGLE_IN
#undef RC_TRIANGLES_PARAM
#undef RC_SAMPLER_TEMPLATE
#undef RC_SAMPLER_PARAM
#undef RC_SAMPLE

#endif  // GPUFUZZ_RENDERER_RASTER_CORE_H
