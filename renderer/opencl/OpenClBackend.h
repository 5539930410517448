// OpenClBackend.h: the opencl backend, the Backend contract on OpenCL 1.2 through the ICD loader
// (loaded at run time: OpenClApi.h), on pocl, Mesa's rusticl, NVIDIA's OpenCL or any other.
//
// A context is a cl_context on the selected device with one in-order command queue; a buffer is a
// cl_mem of that context. copyToDevice is a non-blocking clEnqueueWriteBuffer of a staged copy of
// the caller's bytes (kept until the write is seen complete); launch enqueues the raster kernel
// (RasterProgram.h, built on a context's first launch); copyToHost is a blocking
// clEnqueueReadBuffer; synchronize is clFinish. destroyContext waits for the queue (clFinish),
// then releases the kernel, program, queue and context: OpenCL's release is reference counted, so
// a context released before its buffers lives until they are released, and freeBuffer stays
// valid after its context's destroy. A buffer released while queued work uses it goes once that
// work completes.
//
// Waits are checked: every command's event is kept, and after each wait pendingAfterWait() asks
// each one's CL_EVENT_COMMAND_EXECUTION_STATUS; a command not CL_COMPLETE (or terminated with an
// error) is reported as "clFinish returned while 1 command enqueued before it was CL_QUEUED
// (clEnqueueWriteBuffer)". Events seen complete are released then.
//
// A handle the backend does not know, a buffer of another context or a size out of range throws
// DeviceError naming the call it would have made, without making it: OpenCL's answer to a call
// on a released object is undefined behaviour (a crash in the loader's dispatch, measured), not
// an error code. Every failed call throws DeviceError naming the call and the CL error.
//
// memoryInUse() counts the buffers not yet passed to freeBuffer (their requested sizes) and the
// contexts not yet destroyed. Not thread-safe: calls come one at a time, from any thread (the
// Device seam locks them), but their OpenCL calls overlap other threads' (RuntimeSeam.h), with
// no call kept apart. OpenCL objects are reference counted and every entry point is thread-safe
// except clSetKernelArg on one kernel; a context's kernel serves only that context's calls, which
// never overlap (docs/sequences.md, Threads). A call copies a buffer's handle before its first
// OpenCL call; loops over a context's commands walk a copy taken out before their first call.
#pragma once

#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "renderer/device/Backend.h"
#include "renderer/device/DeviceError.h"
#include "renderer/opencl/OpenClApi.h"
#include "renderer/opencl/OpenClDeviceMemory.h"
#include "renderer/opencl/OpenClDevices.h"

namespace gpufuzz {

class OpenClBackend final : public Backend {
 public:
  /// On the device `deviceText` selects (OpenClDevices.h), through `api`. Throws
  /// DeviceUnavailable when there is no such device.
  OpenClBackend(const OpenClApi& api, std::string_view deviceText);
  ~OpenClBackend() override;
  OpenClBackend(const OpenClBackend&) = delete;
  OpenClBackend& operator=(const OpenClBackend&) = delete;

  std::string_view name() const override { return "opencl"; }
  /// "Portable Computing Language / pthread-haswell-AMD EPYC / driver 3.1+debian"
  std::string description() const override { return device_.identity(); }
  bool leaveDeviceMemory(uint64_t bytes) override {
    return leaveOpenClMemory(api_, device_, bytes, held_);
  }
  ContextId createContext() override;
  void destroyContext(ContextId ctx) override;
  BufferId allocBuffer(ContextId ctx, uint64_t bytes) override;
  void freeBuffer(BufferId buf) override;
  void copyToDevice(ContextId ctx, BufferId dst, std::span<const std::byte> src) override;
  void copyToHost(ContextId ctx, BufferId src, std::span<std::byte> dst) override;
  void launch(ContextId ctx, const RasterLaunch& launch) override;
  void synchronize(ContextId ctx) override;
  std::optional<PendingWork> pendingAfterWait(ContextId ctx) override;
  MemoryInUse memoryInUse() const override;
  /// clCreateBuffer says CL_MEM_OBJECT_ALLOCATION_FAILURE when device memory runs out, other
  /// calls CL_OUT_OF_RESOURCES; host memory is CL_OUT_OF_HOST_MEMORY; OpenCL has no lost device.
  std::optional<std::string> failureError(FailureKind kind, CallPoint point) const override {
    switch (kind) {
      case FailureKind::DeviceMemory:
        return point == CallPoint::BufAlloc ? "CL_MEM_OBJECT_ALLOCATION_FAILURE"
                                            : "CL_OUT_OF_RESOURCES";
      case FailureKind::HostMemory:
        return "CL_OUT_OF_HOST_MEMORY";
      case FailureKind::DeviceLost:
        break;
    }
    return std::nullopt;
  }

  const OpenClDevice& device() const { return device_; }
  /// The runtime handles behind a context and a buffer, for tests that ask the runtime itself
  /// (reference counts, a buffer's context). Null when unknown.
  cl_context contextHandle(ContextId ctx) const;
  cl_command_queue queueHandle(ContextId ctx) const;
  cl_mem bufferHandle(BufferId buf) const;

 private:
  struct Command {
    cl_event event = nullptr;
    const char* call = "";
    std::vector<std::byte> staged;  // an upload's source, alive until the write completes
  };
  struct Context {
    cl_context handle = nullptr;
    cl_command_queue queue = nullptr;
    cl_program program = nullptr;  // built on the first launch
    cl_kernel kernel = nullptr;
    std::vector<Command> inFlight;  // enqueued, not yet seen complete
    const char* lastWait = "clFinish";
  };
  struct Buffer {
    ContextId owner = 0;
    cl_mem mem = nullptr;
    uint64_t bytes = 0;
  };

  Context& liveContext(ContextId ctx, CallPoint point, const char* call);
  const Buffer& ownedBuffer(BufferId buf, ContextId ctx, uint64_t bytesNeeded, CallPoint point,
                            const char* call, const char* role) const;
  void ensureKernel(Context& context);
  void enqueued(Context& context, cl_event event, const char* call,
                std::vector<std::byte> staged = {});
  /// Asks every in-flight command's status; releases those complete or failed, keeps the rest,
  /// and describes what was not complete.
  std::optional<PendingWork> collect(Context& context);
  /// Releases everything of a context, first failure returned; staged bytes of commands still
  /// pending are kept for the life of the backend, since the runtime may still read them.
  std::optional<DeviceError> release(Context& context, CallPoint point);

  OpenClApi api_;
  OpenClDevice device_;
  /// What --device-memory took.
  HeldClMemory held_;
  std::map<ContextId, Context> contexts_;
  std::map<BufferId, Buffer> buffers_;
  ReleasedWaits releasedWaits_;
  std::vector<std::vector<std::byte>> abandonedStaging_;
  ContextId nextContext_ = 1;
  BufferId nextBuffer_ = 1;
  uint64_t bytesInUse_ = 0;
};

/// A backend on the process's ICD loader. Throws DeviceUnavailable when OpenCL is absent or no
/// device matches.
std::unique_ptr<OpenClBackend> makeOpenClBackend(std::string_view deviceText = {});

}  // namespace gpufuzz
