// OpenClDevices.h: the OpenCL devices the ICD loader offers, and picking one by name.
//
// `--device TEXT` (docs/cli.md) picks the first GPU whose platform name, platform vendor or
// device name contains TEXT, ignoring case ("pocl", "rusticl", "nvidia", "llvmpipe"), else the
// first device that does; with no TEXT, the first GPU, else the first device. Where several GPUs
// match, GPUFUZZ_DEVICE_INDEX picks one of them (renderer/device/DeviceIndex.h). Platforms
// without devices (Mesa's clover on a machine without a supported GPU) are skipped. Enumerating
// is the first OpenCL call of a process: see OpenClApi.h on fork.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "renderer/opencl/OpenClApi.h"

namespace gpufuzz {

struct OpenClDevice {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  std::string platformName;     // "Portable Computing Language", "rusticl", "NVIDIA CUDA"
  std::string platformVendor;   // "The pocl project", "Mesa/X.org", "NVIDIA Corporation"
  std::string platformVersion;  // "OpenCL 3.0 PoCL 3.1+debian ..."
  std::string deviceName;       // "pthread-haswell-AMD EPYC", "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string driverVersion;    // CL_DRIVER_VERSION: "3.1+debian", "580.159.04"
  bool gpu = false;
  uint64_t maxAllocBytes = 0;  // CL_DEVICE_MAX_MEM_ALLOC_SIZE

  /// What every report names: platform, device and driver version, e.g.
  /// "Portable Computing Language / pthread-haswell-AMD EPYC / driver 3.1+debian".
  std::string identity() const;
};

/// Every device of every platform, in the loader's order. Throws DeviceUnavailable when there is
/// no platform or no device at all.
std::vector<OpenClDevice> listOpenClDevices(const OpenClApi& api);

/// The device `text` names (see above). Throws DeviceUnavailable naming the devices there are
/// when none matches.
OpenClDevice selectOpenClDevice(const std::vector<OpenClDevice>& devices, std::string_view text);

}  // namespace gpufuzz
