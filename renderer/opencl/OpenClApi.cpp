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

/// Every entry point of OpenClFailures.h, wrapped.
void wrapEntries(OpenClApi& api) {
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
  resolveSymbol(library, "clGetPlatformIDs", api.getPlatformIDs, missing);
  resolveSymbol(library, "clGetPlatformInfo", api.getPlatformInfo, missing);
  resolveSymbol(library, "clGetDeviceIDs", api.getDeviceIDs, missing);
  resolveSymbol(library, "clGetDeviceInfo", api.getDeviceInfo, missing);
  resolveSymbol(library, "clCreateContext", api.createContext, missing);
  resolveSymbol(library, "clRetainContext", api.retainContext, missing);
  resolveSymbol(library, "clReleaseContext", api.releaseContext, missing);
  resolveSymbol(library, "clGetContextInfo", api.getContextInfo, missing);
  resolveSymbol(library, "clCreateCommandQueue", api.createCommandQueue, missing);
  resolveSymbol(library, "clRetainCommandQueue", api.retainCommandQueue, missing);
  resolveSymbol(library, "clReleaseCommandQueue", api.releaseCommandQueue, missing);
  resolveSymbol(library, "clCreateBuffer", api.createBuffer, missing);
  resolveSymbol(library, "clReleaseMemObject", api.releaseMemObject, missing);
  resolveSymbol(library, "clGetMemObjectInfo", api.getMemObjectInfo, missing);
  resolveSymbol(library, "clEnqueueWriteBuffer", api.enqueueWriteBuffer, missing);
  resolveSymbol(library, "clEnqueueReadBuffer", api.enqueueReadBuffer, missing);
  resolveSymbol(library, "clCreateSubBuffer", api.createSubBuffer, missing);
  resolveSymbol(library, "clCreateImage", api.createImage, missing);
  resolveSymbol(library, "clEnqueueFillBuffer", api.enqueueFillBuffer, missing);
  resolveSymbol(library, "clEnqueueCopyBuffer", api.enqueueCopyBuffer, missing);
  resolveSymbol(library, "clEnqueueWriteImage", api.enqueueWriteImage, missing);
  resolveSymbol(library, "clEnqueueReadImage", api.enqueueReadImage, missing);
  resolveSymbol(library, "clSetMemObjectDestructorCallback", api.setMemObjectDestructorCallback,
                missing);
  resolveSymbol(library, "clCreateProgramWithSource", api.createProgramWithSource, missing);
  resolveSymbol(library, "clCreateProgramWithBinary", api.createProgramWithBinary, missing);
  resolveSymbol(library, "clBuildProgram", api.buildProgram, missing);
  resolveSymbol(library, "clGetProgramBuildInfo", api.getProgramBuildInfo, missing);
  resolveSymbol(library, "clGetProgramInfo", api.getProgramInfo, missing);
  resolveSymbol(library, "clReleaseProgram", api.releaseProgram, missing);
  resolveSymbol(library, "clCreateKernel", api.createKernel, missing);
  resolveSymbol(library, "clReleaseKernel", api.releaseKernel, missing);
  resolveSymbol(library, "clSetKernelArg", api.setKernelArg, missing);
  resolveSymbol(library, "clEnqueueNDRangeKernel", api.enqueueNDRangeKernel, missing);
  resolveSymbol(library, "clFlush", api.flush, missing);
  resolveSymbol(library, "clFinish", api.finish, missing);
  resolveSymbol(library, "clGetEventInfo", api.getEventInfo, missing);
  resolveSymbol(library, "clRetainEvent", api.retainEvent, missing);
  resolveSymbol(library, "clReleaseEvent", api.releaseEvent, missing);
  resolveSymbol(library, "clWaitForEvents", api.waitForEvents, missing);
  resolveSymbol(library, "clCreateUserEvent", api.createUserEvent, missing);
  resolveSymbol(library, "clSetUserEventStatus", api.setUserEventStatus, missing);
  resolveSymbol(library, "clSetEventCallback", api.setEventCallback, missing);
  resolveSymbol(library, "clEnqueueMarkerWithWaitList", api.enqueueMarkerWithWaitList, missing);
  resolveSymbol(library, "clEnqueueBarrierWithWaitList", api.enqueueBarrierWithWaitList, missing);
  std::string optional;  // OpenCL 2.0's SVM: a device without it never calls these
  resolveSymbol(library, "clSVMAlloc", api.svmAlloc, optional);
  resolveSymbol(library, "clSVMFree", api.svmFree, optional);
  resolveSymbol(library, "clEnqueueSVMFree", api.enqueueSVMFree, optional);
  resolveSymbol(library, "clEnqueueSVMMemFill", api.enqueueSVMMemFill, optional);
  resolveSymbol(library, "clEnqueueSVMMemcpy", api.enqueueSVMMemcpy, optional);
  resolveSymbol(library, "clCreateCommandQueueWithProperties", api.createCommandQueueWithProperties,
                optional);
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
