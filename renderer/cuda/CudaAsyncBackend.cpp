// CudaAsyncBackend.cpp: the cuda-async backend on the stream-ordered allocator.
#include "renderer/cuda/CudaAsyncBackend.h"

#include <cuda.h>

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

/// The primary context of each device, retained on first use and kept for the life of the
/// process: retaining it is most of a fresh process's start-up (~250-350 ms with cuInit), and
/// releasing it would throw away every pool and module made in it.
CUcontext primaryContext(const CudaDriver& driver, CUdevice device) {
  static std::mutex mutex;
  static std::map<CUdevice, CUcontext> retained;
  const std::lock_guard lock(mutex);
  auto it = retained.find(device);
  if (it != retained.end()) return it->second;
  CUcontext context = nullptr;
  const CUresult result = driver.primaryCtxRetain(&context, device);
  if (result != CUDA_SUCCESS) {
    throw DeviceUnavailable("CUDA device " + std::to_string(device) +
                            " unusable: cuDevicePrimaryCtxRetain: " + driver.errorName(result));
  }
  retained.emplace(device, context);
  return context;
}

class CudaAsyncBackend final : public Backend {
 public:
  explicit CudaAsyncBackend(int ordinal);
  ~CudaAsyncBackend() override;
  CudaAsyncBackend(const CudaAsyncBackend&) = delete;
  CudaAsyncBackend& operator=(const CudaAsyncBackend&) = delete;

  std::string_view name() const override { return "cuda-async"; }
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
    CUstream stream = nullptr;
    CUmemoryPool pool = nullptr;
    /// Copies of copyToDevice sources, so the caller may reuse its memory at once; released when
    /// the queue is next waited for, after which the driver no longer reads them.
    std::vector<std::vector<std::byte>> staged;
  };
  struct Buffer {
    ContextId owner = 0;
    CUdeviceptr address = 0;
    uint64_t bytes = 0;
  };

  void check(CUresult result, CallPoint point, const char* call) const {
    cuda::check(driver_, result, point, call);
  }
  void makeCurrent(CallPoint point) const {
    check(driver_.ctxSetCurrent(primary_), point, "cuCtxSetCurrent");
  }
  Context& liveContext(ContextId ctx, CallPoint point, const char* call);
  const Buffer& ownedBuffer(BufferId buf, ContextId ctx, uint64_t bytesNeeded, CallPoint point,
                            const char* call, const char* role) const;
  void waitForQueue(Context& context, CallPoint point) const;
  /// Every teardown step even after one fails, and the first failure. `pending`, when given,
  /// receives what the stream held after its wait.
  std::optional<DeviceError> teardown(Context& context,
                                      std::optional<PendingWork>* pending = nullptr) const;
  /// Frees `buffer` on the release stream and waits for it (its own stream is gone).
  CUresult freeOnReleaseStream(const Buffer& buffer) const;

  const CudaDriver& driver_;
  CUdevice device_ = 0;
  CUcontext primary_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction kernel_ = nullptr;
  /// Where buffers whose context is destroyed are freed.
  CUstream releaseStream_ = nullptr;
  std::map<ContextId, Context> contexts_;
  std::map<BufferId, Buffer> buffers_;
  ReleasedWaits releasedWaits_;
  ContextId nextContext_ = 1;
  BufferId nextBuffer_ = 1;
  uint64_t bytesInUse_ = 0;
};

CudaAsyncBackend::CudaAsyncBackend(int ordinal) : driver_(cudaDriver()) {
  if (!driver_.asyncMissing.empty()) {
    throw DeviceUnavailable("CUDA driver too old for cuda-async: libcuda.so.1 lacks " +
                            driver_.asyncMissing + "; use the cuda backend");
  }
  if (ordinal < 0 || ordinal >= driver_.deviceCount) {
    throw DeviceUnavailable("no CUDA device " + std::to_string(ordinal) + " (" +
                            std::to_string(driver_.deviceCount) + " found)");
  }
  const std::string device = "CUDA device " + std::to_string(ordinal);
  CUresult result = driver_.deviceGet(&device_, ordinal);
  if (result != CUDA_SUCCESS) {
    throw DeviceUnavailable(device + " unusable: cuDeviceGet: " + driver_.errorName(result));
  }
  primary_ = primaryContext(driver_, device_);
  try {
    makeCurrent(CallPoint::CtxCreate);
    check(driver_.streamCreate(&releaseStream_, CU_STREAM_NON_BLOCKING), CallPoint::CtxCreate,
          "cuStreamCreate");
    check(driver_.moduleLoadData(&module_, cuda::kRasterFatbin), CallPoint::CtxCreate,
          "cuModuleLoadData");
    check(driver_.moduleGetFunction(&kernel_, module_, cuda::kRasterKernelName),
          CallPoint::CtxCreate, "cuModuleGetFunction");
  } catch (const DeviceError& e) {
    if (module_ != nullptr) driver_.moduleUnload(module_);
    if (releaseStream_ != nullptr) driver_.streamDestroy(releaseStream_);
    throw DeviceUnavailable(device + " unusable for cuda-async: " + e.what());
  }
}

CudaAsyncBackend::~CudaAsyncBackend() {
  if (driver_.ctxSetCurrent(primary_) != CUDA_SUCCESS) return;
  for (auto& [id, context] : contexts_) {
    for (const auto& [buf, buffer] : buffers_) {
      if (buffer.owner == id) driver_.memFreeAsync(buffer.address, context.stream);
    }
    teardown(context);
  }
  for (const auto& [buf, buffer] : buffers_) {
    if (!contexts_.contains(buffer.owner)) driver_.memFreeAsync(buffer.address, releaseStream_);
  }
  driver_.streamSynchronize(releaseStream_);
  driver_.streamDestroy(releaseStream_);
  driver_.moduleUnload(module_);
}

CudaAsyncBackend::Context& CudaAsyncBackend::liveContext(ContextId ctx, CallPoint point,
                                                         const char* call) {
  return findHandle(contexts_, ctx, nextContext_, point,
                    std::string(call) + ": context " + std::to_string(ctx), "destroyed");
}

const CudaAsyncBackend::Buffer& CudaAsyncBackend::ownedBuffer(BufferId buf, ContextId ctx,
                                                              uint64_t bytesNeeded, CallPoint point,
                                                              const char* call,
                                                              const char* role) const {
  const std::string what = std::string(call) + ": " + role + " buffer " + std::to_string(buf);
  return checkBufferServes(findHandle(buffers_, buf, nextBuffer_, point, what, "freed"), ctx,
                           bytesNeeded, point, what);
}

void CudaAsyncBackend::waitForQueue(Context& context, CallPoint point) const {
  check(driver_.streamSynchronize(context.stream), point, "cuStreamSynchronize");
  context.staged.clear();
}

std::optional<DeviceError> CudaAsyncBackend::teardown(Context& context,
                                                      std::optional<PendingWork>* pending) const {
  std::optional<DeviceError> first;
  const auto step = [&](CUresult result, const char* call) {
    if (result != CUDA_SUCCESS && !first) {
      first.emplace(CallPoint::CtxDestroy, std::string(call) + ": " + driver_.errorName(result));
    }
  };
  step(driver_.ctxSetCurrent(primary_), "cuCtxSetCurrent");
  if (context.stream != nullptr) {
    step(driver_.streamSynchronize(context.stream), "cuStreamSynchronize");
    if (pending != nullptr) *pending = cuda::pendingOnStream(driver_, context.stream);
    step(driver_.streamDestroy(context.stream), "cuStreamDestroy");
  }
  if (context.pool != nullptr) step(driver_.memPoolDestroy(context.pool), "cuMemPoolDestroy");
  context = Context{};
  return first;
}

CUresult CudaAsyncBackend::freeOnReleaseStream(const Buffer& buffer) const {
  const CUresult result = driver_.memFreeAsync(buffer.address, releaseStream_);
  if (result != CUDA_SUCCESS) return result;
  return driver_.streamSynchronize(releaseStream_);
}

ContextId CudaAsyncBackend::createContext() {
  makeCurrent(CallPoint::CtxCreate);
  Context context;
  try {
    check(driver_.streamCreate(&context.stream, CU_STREAM_NON_BLOCKING), CallPoint::CtxCreate,
          "cuStreamCreate");
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = device_;
    check(driver_.memPoolCreate(&context.pool, &props), CallPoint::CtxCreate, "cuMemPoolCreate");
  } catch (const DeviceError&) {
    teardown(context);
    throw;
  }
  const ContextId id = nextContext_++;
  contexts_.emplace(id, std::move(context));
  return id;
}

void CudaAsyncBackend::destroyContext(ContextId ctx) {
  Context& context = liveContext(ctx, CallPoint::CtxDestroy, "cuMemPoolDestroy");
  std::optional<PendingWork> pending;
  const std::optional<DeviceError> failure = teardown(context, &pending);
  contexts_.erase(ctx);
  releasedWaits_.record(ctx, pending);
  if (failure) throw *failure;
}

BufferId CudaAsyncBackend::allocBuffer(ContextId ctx, uint64_t bytes) {
  const Context& context = liveContext(ctx, CallPoint::BufAlloc, "cuMemAllocFromPoolAsync");
  makeCurrent(CallPoint::BufAlloc);
  CUdeviceptr address = 0;
  check(driver_.memAllocFromPoolAsync(&address, static_cast<size_t>(bytes), context.pool,
                                      context.stream),
        CallPoint::BufAlloc, "cuMemAllocFromPoolAsync");
  const BufferId id = nextBuffer_++;
  buffers_.emplace(id, Buffer{ctx, address, bytes});
  bytesInUse_ += bytes;
  return id;
}

void CudaAsyncBackend::freeBuffer(BufferId buf) {
  auto it = buffers_.find(buf);
  if (it == buffers_.end()) {
    const bool freed = buf > 0 && buf < nextBuffer_;
    throw DeviceError(CallPoint::BufFree, "cuMemFreeAsync: buffer " + std::to_string(buf) +
                                              (freed ? " was already freed" : " is unknown"));
  }
  const Buffer buffer = it->second;
  buffers_.erase(it);
  bytesInUse_ -= buffer.bytes;
  makeCurrent(CallPoint::BufFree);
  auto owner = contexts_.find(buffer.owner);
  if (owner != contexts_.end()) {
    check(driver_.memFreeAsync(buffer.address, owner->second.stream), CallPoint::BufFree,
          "cuMemFreeAsync");
    return;
  }
  check(freeOnReleaseStream(buffer), CallPoint::BufFree, "cuMemFreeAsync");
}

void CudaAsyncBackend::copyToDevice(ContextId ctx, BufferId dst, std::span<const std::byte> src) {
  Context& context = liveContext(ctx, CallPoint::CopyToDevice, "cuMemcpyHtoDAsync");
  const Buffer& buffer = ownedBuffer(dst, ctx, src.size(), CallPoint::CopyToDevice,
                                     "cuMemcpyHtoDAsync", "destination");
  if (src.empty()) return;
  makeCurrent(CallPoint::CopyToDevice);
  cuda::enqueueUpload(driver_, context.stream, context.staged, buffer.address, src);
}

void CudaAsyncBackend::copyToHost(ContextId ctx, BufferId src, std::span<std::byte> dst) {
  Context& context = liveContext(ctx, CallPoint::CopyToHost, "cuMemcpyDtoHAsync");
  const Buffer& buffer =
      ownedBuffer(src, ctx, dst.size(), CallPoint::CopyToHost, "cuMemcpyDtoHAsync", "source");
  makeCurrent(CallPoint::CopyToHost);
  cuda::downloadAndWait(driver_, context.stream, context.staged, buffer.address, dst);
}

void CudaAsyncBackend::launch(ContextId ctx, const RasterLaunch& launch) {
  Context& context = liveContext(ctx, CallPoint::Launch, "cuLaunchKernel");
  cuda::enqueueRaster(
      driver_, kernel_, context.stream, launch,
      [&](BufferId buf, uint64_t bytes, const char* role) {
        return ownedBuffer(buf, ctx, bytes, CallPoint::Launch, "cuLaunchKernel", role).address;
      },
      [&] { makeCurrent(CallPoint::Launch); });
}

void CudaAsyncBackend::synchronize(ContextId ctx) {
  Context& context = liveContext(ctx, CallPoint::Sync, "cuStreamSynchronize");
  makeCurrent(CallPoint::Sync);
  waitForQueue(context, CallPoint::Sync);
}

std::optional<PendingWork> CudaAsyncBackend::pendingAfterWait(ContextId ctx) {
  if (std::optional<PendingWork> released = releasedWaits_.take(ctx)) return released;
  auto it = contexts_.find(ctx);
  if (it == contexts_.end()) return std::nullopt;
  return cuda::pendingOnStream(driver_, it->second.stream);
}

MemoryInUse CudaAsyncBackend::memoryInUse() const {
  return MemoryInUse{bytesInUse_, buffers_.size(), contexts_.size()};
}

}  // namespace

std::unique_ptr<Backend> makeCudaAsyncBackend(int ordinal) {
  return std::make_unique<CudaAsyncBackend>(ordinal);
}

}  // namespace gpufuzz
