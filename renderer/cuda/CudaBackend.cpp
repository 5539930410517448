// CudaBackend.cpp: the cuda backend on the driver API.
#include "renderer/cuda/CudaBackend.h"

#include <cuda.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "renderer/cuda/CudaStreamBackend.h"
#include "renderer/cuda/RasterKernel.h"
#include "renderer/device/DeviceError.h"
#include "renderer/device/RuntimeSeam.h"

namespace gpufuzz {

namespace {

/// The device address ranges of the allocations alive through any cuda backend of this process.
/// The driver hands out a freed address again, so by the time an orphaned buffer (freed by its
/// context's destroy) is freed, its address may belong to a newer allocation, which cuMemFree
/// would free instead. An allocation in flight may hold any free address before it is added.
class LiveAllocations {
 public:
  /// Around each cuMemAlloc: the address it gets is unknown until it returns.
  void allocating(bool begins) {
    const std::lock_guard lock(mutex_);
    inFlight_ += begins ? 1 : -1;
  }
  bool anyInFlight() const {
    const std::lock_guard lock(mutex_);
    return inFlight_ != 0;
  }
  void add(CUdeviceptr base, uint64_t bytes) {
    const std::lock_guard lock(mutex_);
    ranges_[base] = bytes;
  }
  void remove(CUdeviceptr base) {
    const std::lock_guard lock(mutex_);
    ranges_.erase(base);
  }
  bool contains(CUdeviceptr address) const {
    const std::lock_guard lock(mutex_);
    auto it = ranges_.upper_bound(address);
    if (it == ranges_.begin()) return false;
    --it;
    return address - it->first < it->second;
  }

 private:
  mutable std::mutex mutex_;
  std::map<CUdeviceptr, uint64_t> ranges_;
  int inFlight_ = 0;
};

LiveAllocations& liveAllocations() {
  static LiveAllocations allocations;
  return allocations;
}

[[noreturn]] void fail(CallPoint point, std::string message) {
  throw DeviceError(point, std::move(message));
}

std::string hexAddress(CUdeviceptr address) {
  char text[2 + 16 + 1];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(address));
  return text;
}

/// A CUcontext of its own (default settings) with its own copy of the raster kernel's module.
struct DriverContext : cuda::StreamContext {
  CUcontext handle = nullptr;
  CUmodule module = nullptr;
  CUfunction kernel = nullptr;
};

struct DriverBuffer : cuda::StreamBuffer {
  /// Its context was destroyed, and the driver freed its memory with it.
  bool orphaned = false;
};

class CudaBackend final : public cuda::CudaStreamBackend<DriverContext, DriverBuffer> {
 public:
  explicit CudaBackend(int ordinal);
  ~CudaBackend() override;

  std::string_view name() const override { return "cuda"; }
  ContextId createContext() override;
  BufferId allocBuffer(ContextId ctx, uint64_t bytes) override;
  void freeBuffer(BufferId buf) override;

 private:
  CUcontext driverContext(const DriverContext& context) const override { return context.handle; }
  CUfunction kernel(const DriverContext& context) const override { return context.kernel; }
  /// Unloads the module, then marks the buffers of `ctx` orphaned and destroys the driver context.
  void releaseRest(ContextId ctx, const DriverContext& context, const TeardownStep& step) override;
  /// Marks the context's buffers orphaned: from here on their addresses are the driver's again.
  /// Before the destroy, while the driver still holds the addresses, so that no allocation made
  /// after it can be mistaken for one of these.
  void orphanBuffersOf(ContextId ctx);
};

CudaBackend::CudaBackend(int ordinal) : CudaStreamBackend("cuCtxDestroy") {
  openDevice(ordinal);
}

CudaBackend::~CudaBackend() {
  for (auto& [id, context] : contexts_)
    teardown(id, context);
}

void CudaBackend::orphanBuffersOf(ContextId ctx) {
  for (auto& [id, buffer] : buffers_) {
    if (buffer.owner != ctx || buffer.orphaned) continue;
    buffer.orphaned = true;
    liveAllocations().remove(buffer.address);
  }
}

void CudaBackend::releaseRest(ContextId ctx, const DriverContext& context,
                              const TeardownStep& step) {
  if (context.module != nullptr) step(driver_.moduleUnload(context.module), "cuModuleUnload");
  // Held from the marks through the destroy: a buffer not marked orphaned then has a live
  // context, which freeBuffer makes current and frees in.
  const seam::KeepState keep;
  orphanBuffersOf(ctx);
  step(driver_.ctxDestroy(context.handle), "cuCtxDestroy");
}

ContextId CudaBackend::createContext() {
  DriverContext context;
  check(driver_.ctxCreate(&context.handle, 0, device_), CallPoint::CtxCreate, "cuCtxCreate");
  try {
    // cuCtxCreate pushed the new context on the thread's stack, and cuCtxSetCurrent only replaces
    // the top: popping it keeps the stack one deep, so that once the current context is
    // destroyed none is current, rather than a stale one from an earlier create.
    CUcontext popped = nullptr;
    check(driver_.ctxPopCurrent(&popped), CallPoint::CtxCreate, "cuCtxPopCurrent");
    makeCurrent(context, CallPoint::CtxCreate);
    check(driver_.streamCreate(&context.stream, CU_STREAM_NON_BLOCKING), CallPoint::CtxCreate,
          "cuStreamCreate");
    check(driver_.moduleLoadData(&context.module, cuda::kRasterFatbin), CallPoint::CtxCreate,
          "cuModuleLoadData");
    check(driver_.moduleGetFunction(&context.kernel, context.module, cuda::kRasterKernelName),
          CallPoint::CtxCreate, "cuModuleGetFunction");
  } catch (const DeviceError&) {
    teardown(0, context);
    throw;
  }
  return addContext(std::move(context));
}

BufferId CudaBackend::allocBuffer(ContextId ctx, uint64_t bytes) {
  const DriverContext& context = liveContext(ctx, CallPoint::BufAlloc, "cuMemAlloc");
  makeCurrent(context, CallPoint::BufAlloc);
  CUdeviceptr address = 0;
  liveAllocations().allocating(true);
  const CUresult result = driver_.memAlloc(&address, static_cast<size_t>(bytes));
  liveAllocations().allocating(false);
  check(result, CallPoint::BufAlloc, "cuMemAlloc");
  liveAllocations().add(address, bytes);
  return addBuffer(DriverBuffer{{ctx, address, bytes}, false});
}

void CudaBackend::freeBuffer(BufferId buf) {
  const DriverBuffer buffer = takeBuffer(buf, "cuMemFree");
  // Held through the free: another thread's destroy of the owner must not end the context it
  // runs in, and no cuMemAlloc of this backend may begin meanwhile and get the address.
  const seam::KeepState keep;

  if (!buffer.orphaned) {
    liveAllocations().remove(buffer.address);
    makeCurrent(contexts_.at(buffer.owner), CallPoint::BufFree);
    check(driver_.memFree(buffer.address), CallPoint::BufFree, "cuMemFree");
    return;
  }

  const std::string orphan = "buffer " + std::to_string(buf) + " outlived its context " +
                             std::to_string(buffer.owner) + ", whose destroy freed it";
  if (liveAllocations().contains(buffer.address)) {
    fail(CallPoint::BufFree, "cuMemFree: not called: " + orphan + ", and its address " +
                                 hexAddress(buffer.address) +
                                 " now belongs to a live allocation that it would free");
  }
  if (liveAllocations().anyInFlight()) {
    fail(CallPoint::BufFree, "cuMemFree: not called: " + orphan + ", and a cuMemAlloc in flight " +
                                 "on another thread may get its address " +
                                 hexAddress(buffer.address));
  }
  // Officially undefined behaviour; the driver is left to report it, whichever context is
  // current (making the destroyed one current is impossible).
  const CUresult result = driver_.memFree(buffer.address);
  if (result != CUDA_SUCCESS) {
    fail(CallPoint::BufFree, "cuMemFree: " + driver_.errorName(result) + " (" + orphan + ")");
  }
  fail(CallPoint::BufFree,
       "cuMemFree after its context was destroyed: undefined behaviour, driver returned "
       "CUDA_SUCCESS (" +
           orphan + ")");
}

}  // namespace

std::unique_ptr<Backend> makeCudaBackend(int ordinal) {
  return std::make_unique<CudaBackend>(ordinal);
}

}  // namespace gpufuzz
