// Backends.cpp: the backend factory.
#include "renderer/Backends.h"

#include "renderer/InputError.h"
#include "renderer/device/DeviceError.h"
#include "renderer/sim/SimBackend.h"
#if GPUFUZZ_HAVE_OPENCL
#include <cstdlib>

#include "renderer/opencl/OpenClBackend.h"
#endif
#if GPUFUZZ_HAVE_CUDA
#include "renderer/cuda/CudaBackend.h"
#include "renderer/cuda/CudaDriver.h"
#endif

namespace gpufuzz {

bool cudaBackendBuilt() {
  return GPUFUZZ_HAVE_CUDA != 0;
}

int cudaDeviceCount() {
#if GPUFUZZ_HAVE_CUDA
  try {
    return cudaDriver().deviceCount;
  } catch (const DeviceUnavailable&) {
    return 0;
  }
#else
  return 0;
#endif
}

std::unique_ptr<Backend> makeBackend(std::string_view name) {
  if (name == "sim") return makeSimBackend();
#if GPUFUZZ_HAVE_OPENCL
  if (name == "opencl") {
    const char* device = std::getenv("GPUFUZZ_OPENCL_DEVICE");
    return makeOpenClBackend(device != nullptr ? device : "");
  }
#endif
  if (name == "cuda" || name == "auto") {
#if GPUFUZZ_HAVE_CUDA
    try {
      return makeCudaBackend();
    } catch (const DeviceUnavailable&) {
      if (name == "cuda") throw;
      return makeSimBackend();
    }
#else
    if (name == "cuda") {
      throw DeviceUnavailable(
          "this gpufuzz was built without the cuda backend (no CUDA toolkit "
          "at configure time); rebuild where nvcc is installed");
    }
    return makeSimBackend();
#endif
  }
  throw InputError("unknown backend '" + std::string(name) + "' (expected sim, cuda or auto)");
}

}  // namespace gpufuzz
