// OpenClDeviceMemory.cpp: taking an OpenCL GPU's memory for --device-memory.
#include "renderer/opencl/OpenClDeviceMemory.h"

#include <algorithm>
#include <string>

#include "renderer/device/DeviceError.h"

namespace gpufuzz {

namespace {

[[noreturn]] void failed(const char* call, cl_int status) {
  throw DeviceError(CallPoint::BufAlloc, std::string(call) + " (--device-memory): OpenCL error " +
                                             std::to_string(status));
}

bool ranOut(cl_int status) {
  return status == CL_MEM_OBJECT_ALLOCATION_FAILURE || status == CL_OUT_OF_RESOURCES ||
         status == CL_INVALID_BUFFER_SIZE;
}

/// A buffer of `bytes` whose memory the device has committed, or null when it has none left.
cl_mem takeBuffer(const OpenClApi& api, HeldClMemory& held, uint64_t bytes) {
  cl_int status = CL_SUCCESS;
  cl_mem mem = api.createBuffer(held.context, CL_MEM_READ_WRITE, bytes, nullptr, &status);
  if (ranOut(status)) return nullptr;
  if (status != CL_SUCCESS) failed("clCreateBuffer", status);
  const cl_uchar zero = 0;
  status = api.enqueueFillBuffer(held.queue, mem, &zero, 1, 0, bytes, 0, nullptr, nullptr);
  if (status == CL_SUCCESS) status = api.finish(held.queue);
  if (status == CL_SUCCESS) return mem;
  api.releaseMemObject(mem);
  if (!ranOut(status)) failed("clEnqueueFillBuffer", status);
  return nullptr;
}

}  // namespace

void HeldClMemory::release(const OpenClApi& api) {
  for (cl_mem mem : buffers)
    api.releaseMemObject(mem);
  buffers.clear();
  if (queue != nullptr) api.releaseCommandQueue(queue);
  if (context != nullptr) api.releaseContext(context);
  queue = nullptr;
  context = nullptr;
}

bool leaveOpenClMemory(const OpenClApi& api, const OpenClDevice& device, uint64_t leave,
                       HeldClMemory& held) {
  if (!device.gpu) return false;
  cl_ulong global = 0;
  if (const cl_int status = api.getDeviceInfo(device.device, CL_DEVICE_GLOBAL_MEM_SIZE,
                                              sizeof global, &global, nullptr);
      status != CL_SUCCESS) {
    failed("clGetDeviceInfo", status);
  }
  if (leave >= global) return true;

  held.release(api);
  cl_int status = CL_SUCCESS;
  const cl_context_properties properties[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(device.platform), 0};
  held.context = api.createContext(properties, 1, &device.device, nullptr, nullptr, &status);
  if (status != CL_SUCCESS) failed("clCreateContext", status);
  held.queue = api.createCommandQueue(held.context, device.device, 0, &status);
  if (status != CL_SUCCESS) failed("clCreateCommandQueue", status);

  // Big buffers first, halved when the device refuses one, down to 1 MiB: the sizes taken are
  // then powers of two, so that about any multiple of 1 MiB can be given back.
  constexpr uint64_t kSmallest = uint64_t{1} << 20;
  uint64_t chunk = std::min<uint64_t>(device.maxAllocBytes, uint64_t{1} << 30);
  std::vector<std::pair<uint64_t, cl_mem>> taken;
  while (chunk >= kSmallest) {
    cl_mem mem = takeBuffer(api, held, chunk);
    if (mem == nullptr) {
      chunk /= 2;
      continue;
    }
    taken.emplace_back(chunk, mem);
  }
  // Given back largest first, each that still fits within `leave`.
  std::sort(taken.begin(), taken.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  uint64_t given = 0;
  for (const auto& [bytes, mem] : taken) {
    if (given + bytes <= leave) {
      api.releaseMemObject(mem);
      given += bytes;
    } else {
      held.buffers.push_back(mem);
    }
  }
  return true;
}

}  // namespace gpufuzz
