// CudaStreamBackend.h: what the cuda and cuda-async backends share, whoever owns their memory: a
// context is a non-blocking stream (with the staged copies of its uploads) in some driver context,
// and a buffer is a device address owned by one context. Copies, launches, waits, the handle
// checks, the accounting, the teardown of a stream and what a destroyed context's stream held
// are done here, once; a backend says which driver context its contexts run in, which kernel
// they launch, and how each is made and what else it releases.
//
// A backend's `Context` is a StreamContext and its `Buffer` a StreamBuffer, with what else the
// backend keeps of them.
//
// Not thread-safe: the Device seam runs one call's bookkeeping at a time, but lets go of its lock
// while a driver call runs (RuntimeSeam.h), so other threads' driver calls overlap it.
// Calls on one context never overlap (docs/sequences.md, Threads); a free of its buffer may meet
// any of them. So a call copies a buffer's record before its first driver call, and a destroy
// clears the stream from its record before the driver destroys it.
#pragma once

#include <cuda.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "renderer/cuda/CudaCalls.h"
#include "renderer/cuda/CudaDriver.h"
#include "renderer/device/Backend.h"
#include "renderer/device/DeviceError.h"
#include "renderer/device/HandleChecks.h"
#include "renderer/device/PendingWork.h"

namespace gpufuzz::cuda {

/// What every context of a CUDA backend has.
struct StreamContext {
  CUstream stream = nullptr;
  /// Copies of copyToDevice sources, so the caller may reuse its memory at once; released when
  /// the queue is next waited for, after which the driver no longer reads them.
  std::vector<std::vector<std::byte>> staged;
  /// Its destroy has begun: another thread's call must enqueue nothing more on its stream, whose
  /// wait and check are under way.
  bool closing = false;
};

/// What every buffer of a CUDA backend has.
struct StreamBuffer {
  ContextId owner = 0;
  CUdeviceptr address = 0;
  uint64_t bytes = 0;
};

template <typename Context, typename Buffer>
class CudaStreamBackend : public Backend {
 public:
  CudaStreamBackend(const CudaStreamBackend&) = delete;
  CudaStreamBackend& operator=(const CudaStreamBackend&) = delete;

  std::string description() const final { return driver_.describeDevice(device_); }
  bool leaveDeviceMemory(uint64_t bytes) final {
    driver_.leaveDeviceMemory(device_, bytes);
    return true;
  }
  MemoryInUse memoryInUse() const final;
  /// The driver runs out of memory, device or host, as CUDA_ERROR_OUT_OF_MEMORY; a lost device
  /// is no error it returns for a call of its own (failures.md).
  std::optional<std::string> failureError(FailureKind kind, CallPoint) const final {
    if (kind == FailureKind::DeviceLost) return std::nullopt;
    return "CUDA_ERROR_OUT_OF_MEMORY";
  }

  /// Waits for the stream, destroys it and what the backend releases with it (teardown); the
  /// stream's state after the wait is kept for pendingAfterWait. A failed step is thrown once
  /// every step ran and the context is gone.
  void destroyContext(ContextId ctx) final;
  std::optional<PendingWork> pendingAfterWait(ContextId ctx) final;

  /// Enqueued on the context's stream; copyToHost and synchronize wait for it.
  void copyToDevice(ContextId ctx, BufferId dst, std::span<const std::byte> src) final;
  void launch(ContextId ctx, const RasterLaunch& launch) final;
  void copyToHost(ContextId ctx, BufferId src, std::span<std::byte> dst) final;
  void synchronize(ContextId ctx) final;

 protected:
  /// Each teardown step's result and driver call; the first failure is what teardown returns.
  using TeardownStep = std::function<void(CUresult result, const char* call)>;

  /// `destroyCall` names the driver call in destroyContext's handle errors ("cuCtxDestroy:
  /// context 3 was destroyed"). Throws DeviceUnavailable when the driver cannot be loaded.
  explicit CudaStreamBackend(const char* destroyCall)
      : driver_(cudaDriver()), destroyCall_(destroyCall) {}

  /// Picks the device `ordinal`; DeviceUnavailable when there is no such device or the driver
  /// cannot get it.
  void openDevice(int ordinal);

  void check(CUresult result, CallPoint point, const char* call) const {
    cuda::check(driver_, result, point, call);
  }
  void makeCurrent(const Context& context, CallPoint point) const {
    check(driver_.ctxSetCurrent(driverContext(context)), point, "cuCtxSetCurrent");
  }
  Context& liveContext(ContextId ctx, CallPoint point, const char* call) {
    return checkedContext(contexts_, nextContext_, ctx, point, call);
  }
  const Buffer& ownedBuffer(BufferId buf, ContextId ctx, uint64_t bytesNeeded, CallPoint point,
                            const char* call, const char* role) const {
    return checkedBuffer(buffers_, nextBuffer_, buf, ctx, bytesNeeded, point, call, role);
  }
  ContextId addContext(Context context);
  /// Counts the buffer's bytes from now on.
  BufferId addBuffer(const Buffer& buffer);
  /// The record of buffer `buf`, no longer counted, or DeviceError (CallPoint::BufFree) naming
  /// `call`: "<call>: buffer 3 was already freed" or "... is unknown".
  Buffer takeBuffer(BufferId buf, const char* call);
  /// Every teardown step even after one fails (a half-destroyed context must not stay behind),
  /// and the first failure. `ctx` is the context's id, 0 for one never added. `pending`, when
  /// given, receives what the stream held after its wait. Does nothing for a context without a
  /// driver context.
  std::optional<DeviceError> teardown(ContextId ctx, Context& context,
                                      std::optional<PendingWork>* pending = nullptr);

  const CudaDriver& driver_;
  CUdevice device_ = 0;
  std::map<ContextId, Context> contexts_;
  std::map<BufferId, Buffer> buffers_;

 private:
  /// The driver context every call on `context` makes current first.
  virtual CUcontext driverContext(const Context& context) const = 0;
  /// The raster kernel `context` launches.
  virtual CUfunction kernel(const Context& context) const = 0;
  /// Releases what context `ctx` (0: never added) holds besides its stream, after the stream is
  /// destroyed, each driver call through `step`.
  virtual void releaseRest(ContextId ctx, const Context& context, const TeardownStep& step) = 0;

  void waitForQueue(Context& context, CallPoint point) const {
    check(driver_.streamSynchronize(context.stream), point, "cuStreamSynchronize");
    context.staged.clear();
  }

  const char* destroyCall_;
  /// What each destroyed context's stream held after the wait in its teardown, until asked.
  ReleasedWaits releasedWaits_;
  ContextId nextContext_ = 1;
  BufferId nextBuffer_ = 1;
  uint64_t bytesInUse_ = 0;
};

template <typename Context, typename Buffer>
void CudaStreamBackend<Context, Buffer>::openDevice(int ordinal) {
  if (ordinal < 0 || ordinal >= driver_.deviceCount) {
    throw DeviceUnavailable("no CUDA device " + std::to_string(ordinal) + " (" +
                            std::to_string(driver_.deviceCount) + " found)");
  }
  const CUresult result = driver_.deviceGet(&device_, ordinal);
  if (result != CUDA_SUCCESS) {
    throw DeviceUnavailable("CUDA device " + std::to_string(ordinal) +
                            " unusable: cuDeviceGet: " + driver_.errorName(result));
  }
}

template <typename Context, typename Buffer>
ContextId CudaStreamBackend<Context, Buffer>::addContext(Context context) {
  const ContextId id = nextContext_++;
  contexts_.emplace(id, std::move(context));
  return id;
}

template <typename Context, typename Buffer>
BufferId CudaStreamBackend<Context, Buffer>::addBuffer(const Buffer& buffer) {
  const BufferId id = nextBuffer_++;
  buffers_.emplace(id, buffer);
  bytesInUse_ += buffer.bytes;
  return id;
}

template <typename Context, typename Buffer>
Buffer CudaStreamBackend<Context, Buffer>::takeBuffer(BufferId buf, const char* call) {
  const Buffer buffer =
      findHandle(buffers_, buf, nextBuffer_, CallPoint::BufFree,
                 std::string(call) + ": buffer " + std::to_string(buf), "already freed");
  buffers_.erase(buf);
  bytesInUse_ -= buffer.bytes;
  return buffer;
}

template <typename Context, typename Buffer>
std::optional<DeviceError> CudaStreamBackend<Context, Buffer>::teardown(
    ContextId ctx, Context& context, std::optional<PendingWork>* pending) {
  std::optional<DeviceError> first;
  const TeardownStep step = [&](CUresult result, const char* call) {
    if (result != CUDA_SUCCESS && !first) {
      first.emplace(CallPoint::CtxDestroy, std::string(call) + ": " + driver_.errorName(result));
    }
  };
  const CUcontext current = driverContext(context);
  if (current == nullptr) return first;
  // Before the first driver call lets other threads in: a free then keeps off the stream.
  context.closing = true;
  step(driver_.ctxSetCurrent(current), "cuCtxSetCurrent");
  if (context.stream != nullptr) {
    const CUstream stream = context.stream;
    step(driver_.streamSynchronize(stream), "cuStreamSynchronize");
    if (pending != nullptr) *pending = pendingOnStream(driver_, stream);
    // Cleared first, so that no other thread's call is handed the stream while it is destroyed.
    context.stream = nullptr;
    step(driver_.streamDestroy(stream), "cuStreamDestroy");
  }
  releaseRest(ctx, context, step);
  context = Context{};
  return first;
}

template <typename Context, typename Buffer>
void CudaStreamBackend<Context, Buffer>::destroyContext(ContextId ctx) {
  Context& context = liveContext(ctx, CallPoint::CtxDestroy, destroyCall_);
  std::optional<PendingWork> pending;
  const std::optional<DeviceError> failure = teardown(ctx, context, &pending);
  contexts_.erase(ctx);
  releasedWaits_.record(ctx, pending);
  if (failure) throw *failure;
}

template <typename Context, typename Buffer>
void CudaStreamBackend<Context, Buffer>::copyToDevice(ContextId ctx, BufferId dst,
                                                      std::span<const std::byte> src) {
  Context& context = liveContext(ctx, CallPoint::CopyToDevice, "cuMemcpyHtoDAsync");
  // A copy, not a reference into buffers_, which other threads' calls change during makeCurrent.
  const CUdeviceptr address =
      ownedBuffer(dst, ctx, src.size(), CallPoint::CopyToDevice, "cuMemcpyHtoDAsync", "destination")
          .address;
  if (src.empty()) return;
  makeCurrent(context, CallPoint::CopyToDevice);
  enqueueUpload(driver_, context.stream, context.staged, address, src);
}

template <typename Context, typename Buffer>
void CudaStreamBackend<Context, Buffer>::copyToHost(ContextId ctx, BufferId src,
                                                    std::span<std::byte> dst) {
  Context& context = liveContext(ctx, CallPoint::CopyToHost, "cuMemcpyDtoHAsync");
  // A copy, not a reference into buffers_, which other threads' calls change during makeCurrent.
  const CUdeviceptr address =
      ownedBuffer(src, ctx, dst.size(), CallPoint::CopyToHost, "cuMemcpyDtoHAsync", "source")
          .address;
  makeCurrent(context, CallPoint::CopyToHost);
  downloadAndWait(driver_, context.stream, context.staged, address, dst);
}

template <typename Context, typename Buffer>
void CudaStreamBackend<Context, Buffer>::launch(ContextId ctx, const RasterLaunch& launch) {
  Context& context = liveContext(ctx, CallPoint::Launch, "cuLaunchKernel");
  enqueueRaster(
      driver_, kernel(context), context.stream, launch,
      [&](BufferId buf, uint64_t bytes, const char* role) {
        return ownedBuffer(buf, ctx, bytes, CallPoint::Launch, "cuLaunchKernel", role).address;
      },
      [&] { makeCurrent(context, CallPoint::Launch); });
}

template <typename Context, typename Buffer>
void CudaStreamBackend<Context, Buffer>::synchronize(ContextId ctx) {
  Context& context = liveContext(ctx, CallPoint::Sync, "cuStreamSynchronize");
  makeCurrent(context, CallPoint::Sync);
  waitForQueue(context, CallPoint::Sync);
}

template <typename Context, typename Buffer>
std::optional<PendingWork> CudaStreamBackend<Context, Buffer>::pendingAfterWait(ContextId ctx) {
  if (std::optional<PendingWork> released = releasedWaits_.take(ctx)) return released;
  auto it = contexts_.find(ctx);
  if (it == contexts_.end()) return std::nullopt;
  return pendingOnStream(driver_, it->second.stream);
}

template <typename Context, typename Buffer>
MemoryInUse CudaStreamBackend<Context, Buffer>::memoryInUse() const {
  return MemoryInUse{bytesInUse_, buffers_.size(), contexts_.size()};
}

}  // namespace gpufuzz::cuda
