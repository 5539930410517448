// Raster.comp: the raster kernel as a Vulkan compute shader, one invocation per pixel, compiled to
// SPIR-V by glslc at build time and embedded in the vulkan backend. The arithmetic is
// renderer/RasterCore.h, the text every backend and the model compile.
#version 450
#extension GL_EXT_scalar_block_layout : require

// Binding 0: the framebuffer, shaded in place; 1: the triangles; 2: the textures (slots past
// textureCount hold the triangle buffer, never read). The texture index is the same for every
// invocation of a triangle (dynamically uniform), as shaderStorageBufferArrayDynamicIndexing
// allows.
#define RASTER_BUFFERS                                                               \
  layout(std430, set = 0, binding = 0) buffer Framebuffer { uint32_t pixels[]; };    \
  layout(scalar, set = 0, binding = 1) uniform Triangles {                          \
    Triangle triangles[kMaxTriangles];                                               \
  };                                                                                 \
  layout(std430, set = 0, binding = 2) readonly buffer Texture { uint32_t texels[]; } \
  textures[kMaxTextures];                                                            \
  layout(push_constant) uniform Params {                                             \
    uint32_t textureCount;                                                           \
    uint32_t textureSize;                                                            \
    uint32_t width;                                                                  \
    uint32_t height;                                                                 \
    uint32_t triangleCount;                                                          \
    uint32_t corruptXor;                                                             \
  } params;
#define RASTER_SAMPLE(texture, x, y) textures[texture].texels[(y) * params.textureSize + (x)]
#include "renderer/RasterCore.h"

// Must match kRasterGroup in VulkanBackend.cpp.
layout(local_size_x = 8, local_size_y = 8) in;

void main() {
  const uint32_t x = gl_GlobalInvocationID.x;
  const uint32_t y = gl_GlobalInvocationID.y;
  if (x >= params.width || y >= params.height) return;
  const uint32_t index = y * params.width + x;
  const uint32_t shaded = shadePixel(pixels[index], params.triangleCount, params.textureCount,
                                     params.textureSize, int32_t(x), int32_t(y));
  pixels[index] = shaded ^ params.corruptXor;
}
