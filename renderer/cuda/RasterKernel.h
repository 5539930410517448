// RasterKernel.h: the contract between the CUDA raster kernel and the code that launches it: the
// kernel's name, its one parameter block, its block shape, and its embedded fatbin.
//
// The parameter block is passed by value as the kernel's only argument and is read by host code
// (g++) and device code (nvcc) alike, so it holds fixed-width integers only: device addresses are
// CUdeviceptr values, which the kernel reinterprets.
#pragma once

#include <cstddef>
#include <cstdint>

#include "renderer/Raster.h"

namespace gpufuzz::cuda {

inline constexpr const char* kRasterKernelName = "gpufuzzRaster";

/// Threads per block along x and y; the grid covers the framebuffer, rounding up.
inline constexpr uint32_t kRasterBlock = 16;

struct RasterParams {
  uint64_t framebuffer;  // width * height RGBA8 pixels, row-major, shaded in place
  uint64_t triangles;    // triangleCount raster::Triangle
  uint64_t textures[raster::kMaxTextures];  // textureSize^2 RGBA8 texels each, row-major
  uint32_t textureCount;
  uint32_t textureSize;
  uint32_t width;
  uint32_t height;
  uint32_t triangleCount;
  uint32_t corruptXor;  // XORed into every pixel: the launch writes every pixel
};
static_assert(sizeof(RasterParams) == 8 * (2 + raster::kMaxTextures) + 4 * 6,
              "RasterParams must keep the same layout on host and device");

/// The kernel compiled for every supported architecture, for cuModuleLoadData.
extern const unsigned char kRasterFatbin[];
extern const std::size_t kRasterFatbinSize;

}  // namespace gpufuzz::cuda
