// RasterKernel.cl: the raster kernel in OpenCL C, one work-item per pixel. The arithmetic is
// renderer/RasterCore.h, the one source every backend compiles; the build inlines it where it is
// included below and embeds the result (RasterProgram.h), so the runtime compiles one string.

// Textures arrive as separate buffers (at most kMaxTextures, unused ones NULL); shadePixel reads
// them through a private array of their pointers.
#define RASTER_SAMPLER_PARAM __global const uint *const *textures,
#define RASTER_SAMPLE(texture, x, y) textures[(texture)][(y) * textureSize + (x)]

#include "renderer/RasterCore.h"

__kernel void gpufuzzRaster(__global uint *framebuffer, __global const Triangle *triangles,
                            __global const uint *t0, __global const uint *t1,
                            __global const uint *t2, __global const uint *t3,
                            __global const uint *t4, __global const uint *t5,
                            __global const uint *t6, __global const uint *t7,
                            __global const uint *t8, __global const uint *t9,
                            __global const uint *t10, __global const uint *t11,
                            __global const uint *t12, __global const uint *t13,
                            __global const uint *t14, __global const uint *t15,
                            uint textureCount, uint textureSize, uint width, uint height,
                            uint triangleCount, uint corruptXor) {
  const uint x = (uint)get_global_id(0);
  const uint y = (uint)get_global_id(1);
  if (x >= width || y >= height) return;
  __global const uint *textures[16] = {t0, t1, t2,  t3,  t4,  t5,  t6,  t7,
                                       t8, t9, t10, t11, t12, t13, t14, t15};
  const uint index = y * width + x;
  const int px = (int)x;
  const int py = (int)y;
  // Triangle by triangle through the shared shadePixel, skipping those whose bounding box misses
  // the pixel (a covered pixel always lies in it), so that a small triangle costs most pixels two
  // comparisons instead of three 64-bit edge functions. The image is the same.
  uint pixel = framebuffer[index];
  for (uint i = 0U; i < triangleCount; ++i) {
    __global const Triangle *t = triangles + i;
    if (px < min(min(t->x[0], t->x[1]), t->x[2]) || px > max(max(t->x[0], t->x[1]), t->x[2]) ||
        py < min(min(t->y[0], t->y[1]), t->y[2]) || py > max(max(t->y[0], t->y[1]), t->y[2])) {
      continue;
    }
    pixel = shadePixel(pixel, t, 1U, textureCount, textureSize, textures, px, py);
  }
  framebuffer[index] = pixel ^ corruptXor;
}
