// DeviceIndex.h: GPUFUZZ_DEVICE_INDEX, the GPU a backend picks when several match.
//
// Backends that choose their device themselves among those their runtime lists (opencl, vulkan)
// take the first GPU by default. With GPUFUZZ_DEVICE_INDEX=k they take the k-th of the GPUs that
// match, modulo their number, so that the harness can spread children over several GPUs
// (docs/backends.md) as CUDA_VISIBLE_DEVICES does for the CUDA backends. Unset, empty or not a
// number: the first GPU.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <string>

namespace gpufuzz {

inline constexpr const char* kDeviceIndexVariable = "GPUFUZZ_DEVICE_INDEX";

/// Which of `gpus` matching GPUs (at least 1) to take: GPUFUZZ_DEVICE_INDEX modulo `gpus`, else 0.
inline std::size_t deviceIndexAmong(std::size_t gpus) {
  const char* text = std::getenv(kDeviceIndexVariable);
  if (text == nullptr || *text == '\0' || gpus == 0) return 0;
  const std::string value = text;
  if (value.size() > 6 || value.find_first_not_of("0123456789") != std::string::npos) return 0;
  return static_cast<std::size_t>(std::stoul(value)) % gpus;
}

}  // namespace gpufuzz
