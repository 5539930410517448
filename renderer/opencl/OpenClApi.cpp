// OpenClApi.cpp: loading the ICD loader once per process, and OpenCL's names for its codes.
#include "renderer/opencl/OpenClApi.h"

#include <chrono>

#include "renderer/device/RuntimeLibrary.h"
#include "renderer/opencl/OpenClFailures.h"

namespace gpufuzz {

namespace {

constexpr const char* kLibrary = "libOpenCL.so.1";

using LoadResult = RuntimeLoad<OpenClApi>;

/// The loader's own entry points, which the process's table wraps (RuntimeSeam.h).
OpenClApi gReal;
const OpenClApi& realEntries() {
  return gReal;
}

/// Every entry point of the table: X(OpenClApi member, its name, whether a loader may lack it:
/// Optional for OpenCL 2.0's, which a device without them never calls).
#define GPUFUZZ_CL_ENTRIES(X)                                                   \
  X(getPlatformIDs, clGetPlatformIDs, Required)                                 \
  X(getPlatformInfo, clGetPlatformInfo, Required)                               \
  X(getDeviceIDs, clGetDeviceIDs, Required)                                     \
  X(getDeviceInfo, clGetDeviceInfo, Required)                                   \
  X(createContext, clCreateContext, Required)                                   \
  X(retainContext, clRetainContext, Required)                                   \
  X(releaseContext, clReleaseContext, Required)                                 \
  X(getContextInfo, clGetContextInfo, Required)                                 \
  X(createCommandQueue, clCreateCommandQueue, Required)                         \
  X(retainCommandQueue, clRetainCommandQueue, Required)                         \
  X(releaseCommandQueue, clReleaseCommandQueue, Required)                       \
  X(createBuffer, clCreateBuffer, Required)                                     \
  X(releaseMemObject, clReleaseMemObject, Required)                             \
  X(getMemObjectInfo, clGetMemObjectInfo, Required)                             \
  X(enqueueWriteBuffer, clEnqueueWriteBuffer, Required)                         \
  X(enqueueReadBuffer, clEnqueueReadBuffer, Required)                           \
  X(createSubBuffer, clCreateSubBuffer, Required)                               \
  X(createImage, clCreateImage, Required)                                       \
  X(enqueueFillBuffer, clEnqueueFillBuffer, Required)                           \
  X(enqueueCopyBuffer, clEnqueueCopyBuffer, Required)                           \
  X(enqueueWriteImage, clEnqueueWriteImage, Required)                           \
  X(enqueueReadImage, clEnqueueReadImage, Required)                             \
  X(setMemObjectDestructorCallback, clSetMemObjectDestructorCallback, Required) \
  X(createProgramWithSource, clCreateProgramWithSource, Required)               \
  X(createProgramWithBinary, clCreateProgramWithBinary, Required)               \
  X(buildProgram, clBuildProgram, Required)                                     \
  X(getProgramBuildInfo, clGetProgramBuildInfo, Required)                       \
  X(getProgramInfo, clGetProgramInfo, Required)                                 \
  X(releaseProgram, clReleaseProgram, Required)                                 \
  X(createKernel, clCreateKernel, Required)                                     \
  X(releaseKernel, clReleaseKernel, Required)                                   \
  X(setKernelArg, clSetKernelArg, Required)                                     \
  X(enqueueNDRangeKernel, clEnqueueNDRangeKernel, Required)                     \
  X(flush, clFlush, Required)                                                   \
  X(finish, clFinish, Required)                                                 \
  X(getEventInfo, clGetEventInfo, Required)                                     \
  X(retainEvent, clRetainEvent, Required)                                       \
  X(releaseEvent, clReleaseEvent, Required)                                     \
  X(waitForEvents, clWaitForEvents, Required)                                   \
  X(createUserEvent, clCreateUserEvent, Required)                               \
  X(setUserEventStatus, clSetUserEventStatus, Required)                         \
  X(setEventCallback, clSetEventCallback, Required)                             \
  X(enqueueMarkerWithWaitList, clEnqueueMarkerWithWaitList, Required)           \
  X(enqueueBarrierWithWaitList, clEnqueueBarrierWithWaitList, Required)         \
  X(svmAlloc, clSVMAlloc, Optional)                                             \
  X(svmFree, clSVMFree, Optional)                                               \
  X(enqueueSVMFree, clEnqueueSVMFree, Optional)                                 \
  X(enqueueSVMMemFill, clEnqueueSVMMemFill, Optional)                           \
  X(enqueueSVMMemcpy, clEnqueueSVMMemcpy, Optional)                             \
  X(createCommandQueueWithProperties, clCreateCommandQueueWithProperties, Optional)

enum class Group : uint8_t { Required, Optional };

/// Every entry point counted and scheduled; then those of OpenClFailures.h, each wrapper
/// replaced by one that can also fail with what its specification lets it return.
void wrapEntries(OpenClApi& api) {
#define GPUFUZZ_CL_PLAIN(member, name, group) \
  seam::wrap<seam::NoErrors, &realEntries, &OpenClApi::member, 0, seam::Name(#name)>(api);
  GPUFUZZ_CL_ENTRIES(GPUFUZZ_CL_PLAIN)
#undef GPUFUZZ_CL_PLAIN
#define GPUFUZZ_CL_WRAP(errors, member, name, kinds) \
  seam::wrap<errors, &realEntries, &OpenClApi::member, kinds, seam::Name(#name)>(api);
  GPUFUZZ_CL_FAILABLE(GPUFUZZ_CL_WRAP)
#undef GPUFUZZ_CL_WRAP
}

LoadResult load() {
  LoadResult result;
  const auto start = std::chrono::steady_clock::now();
  void* library = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    result.failure = std::string("no OpenCL: ") + kLibrary + " not found (" +
                     (why != nullptr ? why : "no reason given") +
                     "); install the ICD loader and a runtime (Debian: ocl-icd-libopencl1 "
                     "pocl-opencl-icd) or use the sim backend";
    return result;
  }
  OpenClApi api;
  api.loadMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::string missing;
  std::string optional;
#define GPUFUZZ_CL_RESOLVE(member, name, group) \
  resolveSymbol(library, #name, api.member, Group::group == Group::Required ? missing : optional);
  GPUFUZZ_CL_ENTRIES(GPUFUZZ_CL_RESOLVE)
#undef GPUFUZZ_CL_RESOLVE
  if (!missing.empty()) {
    result.failure = std::string("OpenCL loader too old: ") + kLibrary + " lacks " + missing;
    return result;
  }
  gReal = api;
  wrapEntries(api);
  result.api = api;
  return result;
}

}  // namespace

const OpenClApi& openClApi() {
  return loadOnce<OpenClApi>([] { return load(); });
}

std::string clErrorName(cl_int code) {
  switch (code) {
#define GPUFUZZ_CL_ERROR(name) \
  case name:                   \
    return #name;
    GPUFUZZ_CL_ERROR(CL_SUCCESS)
    GPUFUZZ_CL_ERROR(CL_DEVICE_NOT_FOUND)
    GPUFUZZ_CL_ERROR(CL_DEVICE_NOT_AVAILABLE)
    GPUFUZZ_CL_ERROR(CL_COMPILER_NOT_AVAILABLE)
    GPUFUZZ_CL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    GPUFUZZ_CL_ERROR(CL_OUT_OF_RESOURCES)
    GPUFUZZ_CL_ERROR(CL_OUT_OF_HOST_MEMORY)
    GPUFUZZ_CL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE)
    GPUFUZZ_CL_ERROR(CL_MEM_COPY_OVERLAP)
    GPUFUZZ_CL_ERROR(CL_IMAGE_FORMAT_MISMATCH)
    GPUFUZZ_CL_ERROR(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    GPUFUZZ_CL_ERROR(CL_BUILD_PROGRAM_FAILURE)
    GPUFUZZ_CL_ERROR(CL_MAP_FAILURE)
    GPUFUZZ_CL_ERROR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    GPUFUZZ_CL_ERROR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    GPUFUZZ_CL_ERROR(CL_COMPILE_PROGRAM_FAILURE)
    GPUFUZZ_CL_ERROR(CL_LINKER_NOT_AVAILABLE)
    GPUFUZZ_CL_ERROR(CL_LINK_PROGRAM_FAILURE)
    GPUFUZZ_CL_ERROR(CL_DEVICE_PARTITION_FAILED)
    GPUFUZZ_CL_ERROR(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    GPUFUZZ_CL_ERROR(CL_INVALID_VALUE)
    GPUFUZZ_CL_ERROR(CL_INVALID_DEVICE_TYPE)
    GPUFUZZ_CL_ERROR(CL_INVALID_PLATFORM)
    GPUFUZZ_CL_ERROR(CL_INVALID_DEVICE)
    GPUFUZZ_CL_ERROR(CL_INVALID_CONTEXT)
    GPUFUZZ_CL_ERROR(CL_INVALID_QUEUE_PROPERTIES)
    GPUFUZZ_CL_ERROR(CL_INVALID_COMMAND_QUEUE)
    GPUFUZZ_CL_ERROR(CL_INVALID_HOST_PTR)
    GPUFUZZ_CL_ERROR(CL_INVALID_MEM_OBJECT)
    GPUFUZZ_CL_ERROR(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    GPUFUZZ_CL_ERROR(CL_INVALID_IMAGE_SIZE)
    GPUFUZZ_CL_ERROR(CL_INVALID_SAMPLER)
    GPUFUZZ_CL_ERROR(CL_INVALID_BINARY)
    GPUFUZZ_CL_ERROR(CL_INVALID_BUILD_OPTIONS)
    GPUFUZZ_CL_ERROR(CL_INVALID_PROGRAM)
    GPUFUZZ_CL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE)
    GPUFUZZ_CL_ERROR(CL_INVALID_KERNEL_NAME)
    GPUFUZZ_CL_ERROR(CL_INVALID_KERNEL_DEFINITION)
    GPUFUZZ_CL_ERROR(CL_INVALID_KERNEL)
    GPUFUZZ_CL_ERROR(CL_INVALID_ARG_INDEX)
    GPUFUZZ_CL_ERROR(CL_INVALID_ARG_VALUE)
    GPUFUZZ_CL_ERROR(CL_INVALID_ARG_SIZE)
    GPUFUZZ_CL_ERROR(CL_INVALID_KERNEL_ARGS)
    GPUFUZZ_CL_ERROR(CL_INVALID_WORK_DIMENSION)
    GPUFUZZ_CL_ERROR(CL_INVALID_WORK_GROUP_SIZE)
    GPUFUZZ_CL_ERROR(CL_INVALID_WORK_ITEM_SIZE)
    GPUFUZZ_CL_ERROR(CL_INVALID_GLOBAL_OFFSET)
    GPUFUZZ_CL_ERROR(CL_INVALID_EVENT_WAIT_LIST)
    GPUFUZZ_CL_ERROR(CL_INVALID_EVENT)
    GPUFUZZ_CL_ERROR(CL_INVALID_OPERATION)
    GPUFUZZ_CL_ERROR(CL_INVALID_GL_OBJECT)
    GPUFUZZ_CL_ERROR(CL_INVALID_BUFFER_SIZE)
    GPUFUZZ_CL_ERROR(CL_INVALID_MIP_LEVEL)
    GPUFUZZ_CL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE)
    GPUFUZZ_CL_ERROR(CL_INVALID_PROPERTY)
    GPUFUZZ_CL_ERROR(CL_INVALID_IMAGE_DESCRIPTOR)
    GPUFUZZ_CL_ERROR(CL_INVALID_COMPILER_OPTIONS)
    GPUFUZZ_CL_ERROR(CL_INVALID_LINKER_OPTIONS)
    GPUFUZZ_CL_ERROR(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef GPUFUZZ_CL_ERROR
    case -1001:
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
      return "OpenCL error " + std::to_string(code);
  }
}

std::string clExecutionStatusName(cl_int status) {
  switch (status) {
    case CL_QUEUED:
      return "CL_QUEUED";
    case CL_SUBMITTED:
      return "CL_SUBMITTED";
    case CL_RUNNING:
      return "CL_RUNNING";
    case CL_COMPLETE:
      return "CL_COMPLETE";
    default:
      return "failed with " + clErrorName(status);
  }
}

EventAfterWait eventAfterWait(const OpenClApi& api, cl_event event) {
  cl_int status = CL_COMPLETE;
  const cl_int asked =
      api.getEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  if (asked != CL_SUCCESS) {
    return EventAfterWait{false, "of unknown status (clGetEventInfo: " + clErrorName(asked) + ")"};
  }
  if (status > CL_COMPLETE) return EventAfterWait{false, clExecutionStatusName(status)};
  if (status < 0) return EventAfterWait{true, clExecutionStatusName(status)};
  return EventAfterWait{true, {}};
}

}  // namespace gpufuzz
