// RasterKernel.cu: the raster kernel, one thread per pixel, built into a fatbin and embedded in
// the cuda backend (it is never linked as CUDA code, so nothing needs the CUDA runtime).
#include "renderer/cuda/RasterKernel.h"

namespace gpufuzz::cuda {

namespace {

/// Reads texels straight from the textures' device buffers.
struct BufferSampler {
  const RasterParams* params;
  __device__ uint32_t operator()(uint32_t texture, uint32_t x, uint32_t y) const {
    const auto* texels = reinterpret_cast<const uint32_t*>(params->textures[texture]);
    return texels[y * params->textureSize + x];
  }
};

}  // namespace

extern "C" __global__ void gpufuzzRaster(const RasterParams params) {
  const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= params.width || y >= params.height) return;
  auto* pixels = reinterpret_cast<uint32_t*>(params.framebuffer);
  const auto* triangles = reinterpret_cast<const raster::Triangle*>(params.triangles);
  const uint32_t index = y * params.width + x;
  const uint32_t shaded = raster::shadePixel(
      pixels[index], triangles, params.triangleCount, params.textureCount, params.textureSize,
      BufferSampler{&params}, static_cast<int32_t>(x), static_cast<int32_t>(y));
  pixels[index] = shaded ^ params.corruptXor;
}

}  // namespace gpufuzz::cuda
