// LifecycleShader.h: the vulkan model's compute kernel (Lifecycle.comp) as SPIR-V, compiled by
// glslc at build time and embedded, for vkCreateShaderModule.
#pragma once

#include <cstddef>

namespace gpufuzz::vulkan {

/// SPIR-V words, 64-byte aligned; kLifecycleSpirvSize is in bytes (a multiple of 4).
extern const unsigned char kLifecycleSpirv[];
extern const std::size_t kLifecycleSpirvSize;

}  // namespace gpufuzz::vulkan
