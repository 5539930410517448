// RasterShader.h: the raster kernel (Raster.comp) as SPIR-V, compiled by glslc at build time and
// embedded, for vkCreateShaderModule.
#pragma once

#include <cstddef>

namespace gpufuzz::vulkan {

/// SPIR-V words, 64-byte aligned; kRasterSpirvSize is in bytes (a multiple of 4).
extern const unsigned char kRasterSpirv[];
extern const std::size_t kRasterSpirvSize;

}  // namespace gpufuzz::vulkan
