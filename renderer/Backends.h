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

/// "sim", "cuda" or "auto". Throws DeviceUnavailable when cuda is asked for and cannot be used,
/// and InputError for an unknown name.
std::unique_ptr<Backend> makeBackend(std::string_view name);

}  // namespace gpufuzz
