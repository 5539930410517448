// CallFailure.cpp: which calls can fail with which kind of failure.
#include "renderer/device/CallFailure.h"

#include <atomic>

namespace gpufuzz {

std::string_view failureKindText(FailureKind kind) {
  switch (kind) {
    case FailureKind::DeviceMemory:
      return "out of device memory";
    case FailureKind::HostMemory:
      return "out of host memory";
    case FailureKind::DeviceLost:
      return "device lost";
  }
  return "?";
}

bool canFailWith(CallPoint point, FailureKind kind) {
  if (point == CallPoint::CtxDestroy || point == CallPoint::BufFree) return false;
  if (kind == FailureKind::DeviceMemory)
    return point == CallPoint::CtxCreate || point == CallPoint::BufAlloc;
  // A device is lost once it was made: its creation fails only for want of memory.
  if (kind == FailureKind::DeviceLost) return point != CallPoint::CtxCreate;
  return true;
}

namespace {
std::atomic<bool> gMemoryBounded{false};
}  // namespace

void setMemoryBounded(bool bounded) {
  gMemoryBounded = bounded;
}

bool ranOutForReal(std::string_view message, bool declaresOom) {
  if (!gMemoryBounded && !declaresOom) return false;
  // Device memory that a sequence asks past the device's size is the runtime's right answer.
  for (const std::string_view code :
       {"SIM_OUT_OF_MEMORY", "CUDA_ERROR_OUT_OF_MEMORY", "CL_MEM_OBJECT_ALLOCATION_FAILURE",
        "VK_ERROR_OUT_OF_DEVICE_MEMORY"}) {
    if (message.find(code) != std::string_view::npos) return true;
  }
  // CL_OUT_OF_RESOURCES also says a runtime broke its queue: a failure only under a bound.
  return gMemoryBounded && message.find("CL_OUT_OF_RESOURCES") != std::string_view::npos;
}

std::string realFailureDetail(std::string_view message) {
  return std::string(kRealFailurePrefix) + std::string(message);
}

}  // namespace gpufuzz
