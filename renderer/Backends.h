// Backends.h: picks a device backend by name. `auto` means cuda when a CUDA device is usable in
// this process, else sim.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "renderer/device/Backend.h"

namespace gpufuzz {

/// Whether this build contains the cuda backend (the driver is still loaded at run time).
bool cudaBackendBuilt();

/// CUDA devices this process can use (as CUDA_VISIBLE_DEVICES leaves them); 0 when the cuda
/// backend is not built or the driver is unusable. Initialises the driver.
int cudaDeviceCount();

/// "sim", "cuda" or "auto". Throws DeviceUnavailable when cuda is asked for and cannot be used,
/// and InputError for an unknown name.
std::unique_ptr<Backend> makeBackend(std::string_view name);

}  // namespace gpufuzz
