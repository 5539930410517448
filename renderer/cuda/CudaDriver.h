// CudaDriver.h: the CUDA driver API, loaded at run time from libcuda.so.1.
//
// Nothing in the project links libcuda: an executable linked against it does not even start on a
// machine without the NVIDIA driver, and the harness, the sim runner and the unit tests must run
// everywhere. <cuda.h> is used for its types only; every entry point is resolved with dlsym by
// its versioned symbol name, so the ABI we call is the one written here, not whatever a header
// macro maps a plain name to.
//
// cudaDriver() loads and initialises the driver once per process (cuInit, device count) and
// returns the same table every time after; when that fails it throws DeviceUnavailable, with the
// same message every time. The table itself is immutable and may be shared by threads; what the
// driver calls do to the calling thread's current context is the caller's business.
#pragma once

#include <cuda.h>

#include <string>

namespace gpufuzz {

struct CudaDriver {
  CUresult (*init)(unsigned int flags) = nullptr;
  CUresult (*getErrorName)(CUresult error, const char** name) = nullptr;
  CUresult (*deviceGetCount)(int* count) = nullptr;
  CUresult (*deviceGet)(CUdevice* device, int ordinal) = nullptr;

  /// cuCtxCreate_v4 (driver 12.5 and later) takes optional creation parameters; older drivers
  /// only have cuCtxCreate_v2. Exactly one of the two is set; ctxCreate() picks it.
  CUresult (*ctxCreateV4)(CUcontext* ctx, CUctxCreateParams* params, unsigned int flags,
                          CUdevice device) = nullptr;
  CUresult (*ctxCreateV2)(CUcontext* ctx, unsigned int flags, CUdevice device) = nullptr;
  CUresult (*ctxDestroy)(CUcontext ctx) = nullptr;
  CUresult (*ctxSetCurrent)(CUcontext ctx) = nullptr;
  CUresult (*ctxPopCurrent)(CUcontext* ctx) = nullptr;

  CUresult (*streamCreate)(CUstream* stream, unsigned int flags) = nullptr;
  CUresult (*streamDestroy)(CUstream stream) = nullptr;
  CUresult (*streamSynchronize)(CUstream stream) = nullptr;
  CUresult (*streamQuery)(CUstream stream) = nullptr;

  CUresult (*memAlloc)(CUdeviceptr* ptr, size_t bytes) = nullptr;
  CUresult (*memFree)(CUdeviceptr ptr) = nullptr;
  CUresult (*memGetInfo)(size_t* free, size_t* total) = nullptr;
  CUresult (*memcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t bytes,
                              CUstream stream) = nullptr;
  CUresult (*memcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) = nullptr;

  CUresult (*moduleLoadData)(CUmodule* module, const void* image) = nullptr;
  CUresult (*moduleGetFunction)(CUfunction* function, CUmodule module, const char* name) = nullptr;
  CUresult (*moduleUnload)(CUmodule module) = nullptr;
  CUresult (*launchKernel)(CUfunction function, unsigned int gridX, unsigned int gridY,
                           unsigned int gridZ, unsigned int blockX, unsigned int blockY,
                           unsigned int blockZ, unsigned int sharedBytes, CUstream stream,
                           void** params, void** extra) = nullptr;

  /// The stream-ordered allocator and the primary context, which only the cuda-async backend
  /// uses (driver 11.2 and later); null on an older driver, named by asyncMissing.
  CUresult (*primaryCtxRetain)(CUcontext* ctx, CUdevice device) = nullptr;
  CUresult (*memPoolCreate)(CUmemoryPool* pool, const CUmemPoolProps* props) = nullptr;
  CUresult (*memPoolDestroy)(CUmemoryPool pool) = nullptr;
  CUresult (*memAllocFromPoolAsync)(CUdeviceptr* ptr, size_t bytes, CUmemoryPool pool,
                                    CUstream stream) = nullptr;
  CUresult (*memFreeAsync)(CUdeviceptr ptr, CUstream stream) = nullptr;
  CUresult (*deviceGetName)(char* name, int length, CUdevice device) = nullptr;
  CUresult (*driverGetVersion)(int* version) = nullptr;
  /// The stream-ordered entry points this driver lacks ("cuMemPoolCreate, ..."); empty when all
  /// are there.
  std::string asyncMissing;

  /// What the cuda-driver model's executor calls besides the above (docs/models.md); null on a
  /// driver that lacks one, named by modelMissing.
  CUresult (*primaryCtxRelease)(CUdevice device) = nullptr;
  CUresult (*ctxSynchronize)() = nullptr;
  CUresult (*ctxGetStreamPriorityRange)(int* least, int* greatest) = nullptr;
  CUresult (*streamCreateWithPriority)(CUstream* stream, unsigned int flags,
                                       int priority) = nullptr;
  CUresult (*streamWaitEvent)(CUstream stream, CUevent event, unsigned int flags) = nullptr;
  CUresult (*eventCreate)(CUevent* event, unsigned int flags) = nullptr;
  CUresult (*eventRecord)(CUevent event, CUstream stream) = nullptr;
  CUresult (*eventQuery)(CUevent event) = nullptr;
  CUresult (*eventSynchronize)(CUevent event) = nullptr;
  CUresult (*eventDestroy)(CUevent event) = nullptr;
  CUresult (*memPoolTrimTo)(CUmemoryPool pool, size_t keep) = nullptr;
  CUresult (*memPoolSetAttribute)(CUmemoryPool pool, CUmemPool_attribute attr,
                                  void* value) = nullptr;
  CUresult (*memPoolGetAttribute)(CUmemoryPool pool, CUmemPool_attribute attr,
                                  void* value) = nullptr;
  CUresult (*memAllocAsync)(CUdeviceptr* ptr, size_t bytes, CUstream stream) = nullptr;
  CUresult (*memHostAlloc)(void** ptr, size_t bytes, unsigned int flags) = nullptr;
  CUresult (*memFreeHost)(void* ptr) = nullptr;
  CUresult (*memsetD8Async)(CUdeviceptr dst, unsigned char value, size_t count,
                            CUstream stream) = nullptr;
  CUresult (*memcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                              CUstream stream) = nullptr;
  CUresult (*launchHostFunc)(CUstream stream, CUhostFn fn, void* data) = nullptr;
  CUresult (*streamBeginCapture)(CUstream stream, CUstreamCaptureMode mode) = nullptr;
  CUresult (*streamEndCapture)(CUstream stream, CUgraph* graph) = nullptr;
  CUresult (*graphInstantiate)(CUgraphExec* exec, CUgraph graph,
                               unsigned long long flags) = nullptr;
  CUresult (*graphLaunch)(CUgraphExec exec, CUstream stream) = nullptr;
  CUresult (*graphExecDestroy)(CUgraphExec exec) = nullptr;
  CUresult (*graphDestroy)(CUgraph graph) = nullptr;
  CUresult (*memAddressReserve)(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                unsigned long long flags) = nullptr;
  CUresult (*memAddressFree)(CUdeviceptr ptr, size_t size) = nullptr;
  CUresult (*memCreate)(CUmemGenericAllocationHandle* handle, size_t size,
                        const CUmemAllocationProp* prop, unsigned long long flags) = nullptr;
  CUresult (*memRelease)(CUmemGenericAllocationHandle handle) = nullptr;
  CUresult (*memMap)(CUdeviceptr ptr, size_t size, size_t offset,
                     CUmemGenericAllocationHandle handle, unsigned long long flags) = nullptr;
  CUresult (*memUnmap)(CUdeviceptr ptr, size_t size) = nullptr;
  CUresult (*memSetAccess)(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                           size_t count) = nullptr;
  CUresult (*memGetAllocationGranularity)(size_t* granularity, const CUmemAllocationProp* prop,
                                          CUmemAllocationGranularity_flags option) = nullptr;
  /// Across devices: peer access between contexts, copies between them, pools' access.
  CUresult (*deviceCanAccessPeer)(int* canAccess, CUdevice device, CUdevice peer) = nullptr;
  CUresult (*ctxEnablePeerAccess)(CUcontext peer, unsigned int flags) = nullptr;
  CUresult (*ctxDisablePeerAccess)(CUcontext peer) = nullptr;
  CUresult (*memcpyPeerAsync)(CUdeviceptr dst, CUcontext dstContext, CUdeviceptr src,
                              CUcontext srcContext, size_t bytes, CUstream stream) = nullptr;
  CUresult (*memPoolSetAccess)(CUmemoryPool pool, const CUmemAccessDesc* map,
                               size_t count) = nullptr;
  /// The model's entry points this driver lacks; empty when all are there.
  std::string modelMissing;

  /// Devices present once cuInit succeeded; at least 1.
  int deviceCount = 0;

  /// A context with default settings, through whichever create entry point the driver has.
  CUresult ctxCreate(CUcontext* ctx, unsigned int flags, CUdevice device) const;
  /// "CUDA_ERROR_INVALID_VALUE", or "CUDA error 12345" for a code the driver cannot name.
  std::string errorName(CUresult error) const;
  /// "NVIDIA H200, driver 13.0", or what could not be read of it.
  std::string describeDevice(CUdevice device) const;
  /// Takes memory of `device` until about `leave` bytes are free (--device-memory,
  /// docs/failures.md): allocations in its primary context, held for the process's life. Throws
  /// DeviceError naming the call that failed.
  void leaveDeviceMemory(CUdevice device, uint64_t leave) const;
};

/// The process's driver, loaded and initialised on first use. Throws DeviceUnavailable when
/// libcuda.so.1 or an entry point is missing, cuInit fails, or there is no device.
const CudaDriver& cudaDriver();

}  // namespace gpufuzz
