// OpenClApi.h: the OpenCL API through the ICD loader, loaded at run time from libOpenCL.so.1.
//
// Nothing in the project links libOpenCL: every program starts where OpenCL is absent, and only
// `--backend opencl` there fails (DeviceUnavailable, exit 2). <CL/cl.h> is used for its types and
// declarations only; each entry point is resolved with dlsym into a pointer of exactly the
// declared type, so the table below is the ABI the headers promise.
//
// The table is plain data: tests copy the loaded one and replace entries (a clFinish that returns
// early, say) to stand in for a misbehaving runtime without touching the backend.
//
// Fork: a process that made any OpenCL call must not fork children that use OpenCL (pocl's and
// rusticl's worker threads are not in the child, which hangs at its first blocking command).
// Loading the library makes no OpenCL call; the first call does.
#pragma once

// OpenCL 2.0's declarations (SVM) are wanted too; the 1.2 calls the project makes stay
// undeprecated.
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 200
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#include <CL/cl.h>

#include <string>

namespace gpufuzz {

struct OpenClApi {
  decltype(&::clGetPlatformIDs) getPlatformIDs = nullptr;
  decltype(&::clGetPlatformInfo) getPlatformInfo = nullptr;
  decltype(&::clGetDeviceIDs) getDeviceIDs = nullptr;
  decltype(&::clGetDeviceInfo) getDeviceInfo = nullptr;

  decltype(&::clCreateContext) createContext = nullptr;
  decltype(&::clRetainContext) retainContext = nullptr;
  decltype(&::clReleaseContext) releaseContext = nullptr;
  decltype(&::clGetContextInfo) getContextInfo = nullptr;
  decltype(&::clCreateCommandQueue) createCommandQueue = nullptr;
  decltype(&::clRetainCommandQueue) retainCommandQueue = nullptr;
  decltype(&::clReleaseCommandQueue) releaseCommandQueue = nullptr;

  decltype(&::clCreateBuffer) createBuffer = nullptr;
  decltype(&::clReleaseMemObject) releaseMemObject = nullptr;
  decltype(&::clGetMemObjectInfo) getMemObjectInfo = nullptr;
  decltype(&::clEnqueueWriteBuffer) enqueueWriteBuffer = nullptr;
  decltype(&::clEnqueueReadBuffer) enqueueReadBuffer = nullptr;
  decltype(&::clCreateSubBuffer) createSubBuffer = nullptr;
  decltype(&::clCreateImage) createImage = nullptr;
  decltype(&::clEnqueueFillBuffer) enqueueFillBuffer = nullptr;
  decltype(&::clEnqueueCopyBuffer) enqueueCopyBuffer = nullptr;
  decltype(&::clEnqueueWriteImage) enqueueWriteImage = nullptr;
  decltype(&::clEnqueueReadImage) enqueueReadImage = nullptr;
  decltype(&::clSetMemObjectDestructorCallback) setMemObjectDestructorCallback = nullptr;

  decltype(&::clCreateProgramWithSource) createProgramWithSource = nullptr;
  decltype(&::clCreateProgramWithBinary) createProgramWithBinary = nullptr;
  decltype(&::clBuildProgram) buildProgram = nullptr;
  decltype(&::clGetProgramBuildInfo) getProgramBuildInfo = nullptr;
  decltype(&::clGetProgramInfo) getProgramInfo = nullptr;
  decltype(&::clReleaseProgram) releaseProgram = nullptr;
  decltype(&::clCreateKernel) createKernel = nullptr;
  decltype(&::clReleaseKernel) releaseKernel = nullptr;
  decltype(&::clSetKernelArg) setKernelArg = nullptr;
  decltype(&::clEnqueueNDRangeKernel) enqueueNDRangeKernel = nullptr;

  decltype(&::clFlush) flush = nullptr;
  decltype(&::clFinish) finish = nullptr;
  decltype(&::clGetEventInfo) getEventInfo = nullptr;
  decltype(&::clRetainEvent) retainEvent = nullptr;
  decltype(&::clReleaseEvent) releaseEvent = nullptr;
  decltype(&::clWaitForEvents) waitForEvents = nullptr;
  decltype(&::clCreateUserEvent) createUserEvent = nullptr;
  decltype(&::clSetUserEventStatus) setUserEventStatus = nullptr;
  decltype(&::clSetEventCallback) setEventCallback = nullptr;
  decltype(&::clEnqueueMarkerWithWaitList) enqueueMarkerWithWaitList = nullptr;
  decltype(&::clEnqueueBarrierWithWaitList) enqueueBarrierWithWaitList = nullptr;

  /// OpenCL 2.0's shared virtual memory: null where the loader predates it (the rest still works).
  decltype(&::clSVMAlloc) svmAlloc = nullptr;
  decltype(&::clSVMFree) svmFree = nullptr;
  decltype(&::clEnqueueSVMFree) enqueueSVMFree = nullptr;
  decltype(&::clEnqueueSVMMemFill) enqueueSVMMemFill = nullptr;
  decltype(&::clEnqueueSVMMemcpy) enqueueSVMMemcpy = nullptr;
  /// OpenCL 2.0's queue with properties: what PyOpenCL calls where the loader has it.
  decltype(&::clCreateCommandQueueWithProperties) createCommandQueueWithProperties = nullptr;

  /// Milliseconds that dlopen of the loader took (the loader alone: vendors load at the first
  /// call), for the throughput benchmark's account of where a child's time goes.
  double loadMs = 0;
};

/// The process's ICD loader, loaded on first use and never unloaded. Throws DeviceUnavailable
/// when libOpenCL.so.1 or an entry point is missing; the same answer every time.
const OpenClApi& openClApi();

/// "CL_INVALID_VALUE", or "OpenCL error -9999" for a code without a name.
std::string clErrorName(cl_int code);

/// "CL_QUEUED", "CL_SUBMITTED", "CL_RUNNING", "CL_COMPLETE", or a failed command's error name.
std::string clExecutionStatusName(cl_int status);

/// The wait-completion oracle's question about one command, asked after a wait that should have
/// completed it: where its event stands. Every check of a wait (the backend's, the opencl model's
/// executor's) asks it, so all of them judge a command alike.
struct EventAfterWait {
  /// The runtime is done with the command (complete or terminated): its event may be released.
  bool done = false;
  /// Why the wait should not have returned yet: "CL_QUEUED", "failed with CL_OUT_OF_RESOURCES",
  /// "of unknown status (clGetEventInfo: CL_INVALID_EVENT)"; empty when CL_COMPLETE.
  std::string stale;
};
EventAfterWait eventAfterWait(const OpenClApi& api, cl_event event);

}  // namespace gpufuzz
