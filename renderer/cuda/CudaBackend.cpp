// CudaBackend.cpp: the cuda backend on the driver API.
#include "renderer/cuda/CudaBackend.h"

#include <cuda.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "renderer/cuda/CudaCalls.h"
#include "renderer/cuda/CudaDriver.h"
#include "renderer/cuda/RasterKernel.h"
#include "renderer/device/DeviceError.h"
#include "renderer/device/HandleChecks.h"

namespace gpufuzz {

namespace {

/// The device address ranges of the allocations alive through any cuda backend of this process.
/// The driver hands out a freed address again, so by the time an orphaned buffer (freed by its
/// context's destroy) is freed, its address may belong to a newer allocation, which cuMemFree
/// would free instead.
class LiveAllocations {
 public:
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

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int ordinal);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return "cuda"; }
  std::string description() const override { return driver_.describeDevice(device_); }
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

 private:
  struct Context {
    CUcontext handle = nullptr;
    CUstream stream = nullptr;
    CUmodule module = nullptr;
    CUfunction kernel = nullptr;
    /// Copies of copyToDevice sources, so the caller may reuse its memory at once; released when
    /// the queue is next waited for, after which the driver no longer reads them.
    std::vector<std::vector<std::byte>> staged;
  };
  struct Buffer {
    ContextId owner = 0;
    CUdeviceptr address = 0;
    uint64_t bytes = 0;
    /// Its context was destroyed, and the driver freed its memory with it.
    bool orphaned = false;
  };

  void check(CUresult result, CallPoint point, const char* call) const;
  Context& liveContext(ContextId ctx, CallPoint point, const char* call);
  const Buffer& ownedBuffer(BufferId buf, ContextId ctx, uint64_t bytesNeeded, CallPoint point,
                            const char* call, const char* role) const;
  void makeCurrent(const Context& context, CallPoint point) const;
  void waitForQueue(Context& context, CallPoint point) const;
  /// Marks the context's buffers orphaned: from here on their addresses are the driver's again.
  void orphanBuffersOf(ContextId ctx);
  /// What the stream's own state says of the work enqueued on it (cuStreamQuery), right after a
  /// wait for it.
  std::optional<PendingWork> queryStream(CUstream stream) const;
  /// Every teardown step even after one fails (a half-destroyed context must not stay behind),
  /// and the first failure. `pending`, when given, receives what the stream held after its wait.
  std::optional<DeviceError> teardown(Context& context,
                                      std::optional<PendingWork>* pending = nullptr) const;

  const CudaDriver& driver_;
  CUdevice device_ = 0;
  std::map<ContextId, Context> contexts_;
  std::map<BufferId, Buffer> buffers_;
  /// What each destroyed context's stream held after the wait in its teardown, until asked.
  ReleasedWaits releasedWaits_;
  ContextId nextContext_ = 1;
  BufferId nextBuffer_ = 1;
  uint64_t bytesInUse_ = 0;
};

CudaBackend::CudaBackend(int ordinal) : driver_(cudaDriver()) {
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

CudaBackend::~CudaBackend() {
  for (auto& [id, context] : contexts_) {
    orphanBuffersOf(id);
    teardown(context);
  }
}

void CudaBackend::check(CUresult result, CallPoint point, const char* call) const {
  cuda::check(driver_, result, point, call);
}

CudaBackend::Context& CudaBackend::liveContext(ContextId ctx, CallPoint point, const char* call) {
  return findHandle(contexts_, ctx, nextContext_, point,
                    std::string(call) + ": context " + std::to_string(ctx), "destroyed");
}

const CudaBackend::Buffer& CudaBackend::ownedBuffer(BufferId buf, ContextId ctx,
                                                    uint64_t bytesNeeded, CallPoint point,
                                                    const char* call, const char* role) const {
  const std::string what = std::string(call) + ": " + role + " buffer " + std::to_string(buf);
  return checkBufferServes(findHandle(buffers_, buf, nextBuffer_, point, what, "freed"), ctx,
                           bytesNeeded, point, what);
}

void CudaBackend::makeCurrent(const Context& context, CallPoint point) const {
  check(driver_.ctxSetCurrent(context.handle), point, "cuCtxSetCurrent");
}

void CudaBackend::waitForQueue(Context& context, CallPoint point) const {
  check(driver_.streamSynchronize(context.stream), point, "cuStreamSynchronize");
  context.staged.clear();
}

void CudaBackend::orphanBuffersOf(ContextId ctx) {
  for (auto& [id, buffer] : buffers_) {
    if (buffer.owner != ctx || buffer.orphaned) continue;
    buffer.orphaned = true;
    liveAllocations().remove(buffer.address);
  }
}

std::optional<PendingWork> CudaBackend::queryStream(CUstream stream) const {
  return cuda::pendingOnStream(driver_, stream);
}

std::optional<DeviceError> CudaBackend::teardown(Context& context,
                                                 std::optional<PendingWork>* pending) const {
  std::optional<DeviceError> first;
  const auto step = [&](CUresult result, const char* call) {
    if (result != CUDA_SUCCESS && !first) {
      first.emplace(CallPoint::CtxDestroy, std::string(call) + ": " + driver_.errorName(result));
    }
  };
  if (context.handle == nullptr) return first;
  step(driver_.ctxSetCurrent(context.handle), "cuCtxSetCurrent");
  if (context.stream != nullptr) {
    step(driver_.streamSynchronize(context.stream), "cuStreamSynchronize");
    if (pending != nullptr) *pending = queryStream(context.stream);
    step(driver_.streamDestroy(context.stream), "cuStreamDestroy");
  }
  if (context.module != nullptr) step(driver_.moduleUnload(context.module), "cuModuleUnload");
  step(driver_.ctxDestroy(context.handle), "cuCtxDestroy");
  context = Context{};
  return first;
}

ContextId CudaBackend::createContext() {
  Context context;
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
    teardown(context);
    throw;
  }
  const ContextId id = nextContext_++;
  contexts_.emplace(id, std::move(context));
  return id;
}

void CudaBackend::destroyContext(ContextId ctx) {
  Context& context = liveContext(ctx, CallPoint::CtxDestroy, "cuCtxDestroy");
  // Before the destroy, while the driver still holds the addresses, so that no allocation made
  // after it can be mistaken for one of these.
  orphanBuffersOf(ctx);
  std::optional<PendingWork> pending;
  const std::optional<DeviceError> failure = teardown(context, &pending);
  contexts_.erase(ctx);
  releasedWaits_.record(ctx, pending);
  if (failure) throw *failure;
}

BufferId CudaBackend::allocBuffer(ContextId ctx, uint64_t bytes) {
  const Context& context = liveContext(ctx, CallPoint::BufAlloc, "cuMemAlloc");
  makeCurrent(context, CallPoint::BufAlloc);
  CUdeviceptr address = 0;
  check(driver_.memAlloc(&address, static_cast<size_t>(bytes)), CallPoint::BufAlloc, "cuMemAlloc");
  liveAllocations().add(address, bytes);
  const BufferId id = nextBuffer_++;
  buffers_.emplace(id, Buffer{ctx, address, bytes, false});
  bytesInUse_ += bytes;
  return id;
}

void CudaBackend::freeBuffer(BufferId buf) {
  auto it = buffers_.find(buf);
  if (it == buffers_.end()) {
    const bool freed = buf > 0 && buf < nextBuffer_;
    fail(CallPoint::BufFree, "cuMemFree: buffer " + std::to_string(buf) +
                                 (freed ? " was already freed" : " is unknown"));
  }
  const Buffer buffer = it->second;
  buffers_.erase(it);
  bytesInUse_ -= buffer.bytes;

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

void CudaBackend::copyToDevice(ContextId ctx, BufferId dst, std::span<const std::byte> src) {
  Context& context = liveContext(ctx, CallPoint::CopyToDevice, "cuMemcpyHtoDAsync");
  const Buffer& buffer = ownedBuffer(dst, ctx, src.size(), CallPoint::CopyToDevice,
                                     "cuMemcpyHtoDAsync", "destination");
  if (src.empty()) return;
  makeCurrent(context, CallPoint::CopyToDevice);
  cuda::enqueueUpload(driver_, context.stream, context.staged, buffer.address, src);
}

void CudaBackend::copyToHost(ContextId ctx, BufferId src, std::span<std::byte> dst) {
  Context& context = liveContext(ctx, CallPoint::CopyToHost, "cuMemcpyDtoHAsync");
  const Buffer& buffer =
      ownedBuffer(src, ctx, dst.size(), CallPoint::CopyToHost, "cuMemcpyDtoHAsync", "source");
  makeCurrent(context, CallPoint::CopyToHost);
  cuda::downloadAndWait(driver_, context.stream, context.staged, buffer.address, dst);
}

void CudaBackend::launch(ContextId ctx, const RasterLaunch& launch) {
  Context& context = liveContext(ctx, CallPoint::Launch, "cuLaunchKernel");
  cuda::enqueueRaster(
      driver_, context.kernel, context.stream, launch,
      [&](BufferId buf, uint64_t bytes, const char* role) {
        return ownedBuffer(buf, ctx, bytes, CallPoint::Launch, "cuLaunchKernel", role).address;
      },
      [&] { makeCurrent(context, CallPoint::Launch); });
}

void CudaBackend::synchronize(ContextId ctx) {
  Context& context = liveContext(ctx, CallPoint::Sync, "cuStreamSynchronize");
  makeCurrent(context, CallPoint::Sync);
  waitForQueue(context, CallPoint::Sync);
}

std::optional<PendingWork> CudaBackend::pendingAfterWait(ContextId ctx) {
  if (std::optional<PendingWork> released = releasedWaits_.take(ctx)) return released;
  auto it = contexts_.find(ctx);
  if (it == contexts_.end()) return std::nullopt;
  return queryStream(it->second.stream);
}

MemoryInUse CudaBackend::memoryInUse() const {
  return MemoryInUse{bytesInUse_, buffers_.size(), contexts_.size()};
}

}  // namespace

std::unique_ptr<Backend> makeCudaBackend(int ordinal) {
  return std::make_unique<CudaBackend>(ordinal);
}

}  // namespace gpufuzz
