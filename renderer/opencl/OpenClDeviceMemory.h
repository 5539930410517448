// OpenClDeviceMemory.h: --device-memory on an OpenCL GPU (docs/failures.md): the device's memory
// taken until about the asked bytes are left, so that the run's own allocations run out for real.
#pragma once

#include <cstdint>
#include <vector>

#include "renderer/opencl/OpenClApi.h"
#include "renderer/opencl/OpenClDevices.h"

namespace gpufuzz {

/// Memory taken for --device-memory: a context of its own, its queue and its buffers, held until
/// released (the holder's destructor) or the process ends.
struct HeldClMemory {
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  std::vector<cl_mem> buffers;
  void release(const OpenClApi& api);
};

/// Takes memory of `device` until about `leave` bytes of it are free, into `held`. OpenCL has no
/// query of free memory, so buffers are made and filled until the device refuses one, then about
/// `leave` bytes of them are given back. They are filled because NVIDIA's OpenCL allocates a
/// buffer's memory at its first use. Returns false, having done nothing, for a device that is not
/// a GPU (pocl, rusticl): its memory is the host's, which no allocation bounds. A `leave` of at
/// least the device's global memory takes nothing: the probe asks so. Throws DeviceError naming
/// the call that failed.
bool leaveOpenClMemory(const OpenClApi& api, const OpenClDevice& device, uint64_t leave,
                       HeldClMemory& held);

}  // namespace gpufuzz
