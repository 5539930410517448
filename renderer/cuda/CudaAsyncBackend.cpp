// CudaAsyncBackend.cpp: the cuda-async backend on the stream-ordered allocator.
#include "renderer/cuda/CudaAsyncBackend.h"

#include <cuda.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "renderer/cuda/CudaStreamBackend.h"
#include "renderer/cuda/RasterKernel.h"
#include "renderer/device/DeviceError.h"
#include "renderer/device/RuntimeSeam.h"

namespace gpufuzz {

namespace {

/// A stream and a memory pool of its own on the primary context.
struct PoolContext : cuda::StreamContext {
  CUmemoryPool pool = nullptr;
};

using PoolBuffer = cuda::StreamBuffer;

class CudaAsyncBackend final : public cuda::CudaStreamBackend<PoolContext, PoolBuffer> {
 public:
  explicit CudaAsyncBackend(int ordinal);
  ~CudaAsyncBackend() override;

  std::string_view name() const override { return "cuda-async"; }
  ContextId createContext() override;
  BufferId allocBuffer(ContextId ctx, uint64_t bytes) override;
  void freeBuffer(BufferId buf) override;

 private:
  CUcontext driverContext(const PoolContext&) const override { return primary_; }
  CUfunction kernel(const PoolContext&) const override { return kernel_; }
  void releaseRest(ContextId /*ctx*/, const PoolContext& context,
                   const TeardownStep& step) override {
    if (context.pool != nullptr) step(driver_.memPoolDestroy(context.pool), "cuMemPoolDestroy");
  }
  void makeCurrent(CallPoint point) const {
    check(driver_.ctxSetCurrent(primary_), point, "cuCtxSetCurrent");
  }
  /// Frees `buffer` on the release stream and waits for it (its own stream is gone).
  CUresult freeOnReleaseStream(const PoolBuffer& buffer) const;

  CUcontext primary_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction kernel_ = nullptr;
  /// Where buffers whose context is destroyed are freed.
  CUstream releaseStream_ = nullptr;
};

CudaAsyncBackend::CudaAsyncBackend(int ordinal) : CudaStreamBackend("cuMemPoolDestroy") {
  if (!driver_.asyncMissing.empty()) {
    throw DeviceUnavailable("CUDA driver too old for cuda-async: libcuda.so.1 lacks " +
                            driver_.asyncMissing + "; use the cuda backend");
  }
  openDevice(ordinal);
  const std::string device = "CUDA device " + std::to_string(ordinal);
  primary_ = cuda::retainedPrimaryContext(driver_, device_);
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
    teardown(id, context);
  }
  for (const auto& [buf, buffer] : buffers_) {
    if (!contexts_.contains(buffer.owner)) driver_.memFreeAsync(buffer.address, releaseStream_);
  }
  driver_.streamSynchronize(releaseStream_);
  driver_.streamDestroy(releaseStream_);
  driver_.moduleUnload(module_);
}

CUresult CudaAsyncBackend::freeOnReleaseStream(const PoolBuffer& buffer) const {
  const CUresult result = driver_.memFreeAsync(buffer.address, releaseStream_);
  if (result != CUDA_SUCCESS) return result;
  return driver_.streamSynchronize(releaseStream_);
}

ContextId CudaAsyncBackend::createContext() {
  makeCurrent(CallPoint::CtxCreate);
  PoolContext context;
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
    teardown(0, context);
    throw;
  }
  return addContext(std::move(context));
}

BufferId CudaAsyncBackend::allocBuffer(ContextId ctx, uint64_t bytes) {
  const PoolContext& context = liveContext(ctx, CallPoint::BufAlloc, "cuMemAllocFromPoolAsync");
  makeCurrent(CallPoint::BufAlloc);
  CUdeviceptr address = 0;
  check(driver_.memAllocFromPoolAsync(&address, static_cast<size_t>(bytes), context.pool,
                                      context.stream),
        CallPoint::BufAlloc, "cuMemAllocFromPoolAsync");
  return addBuffer(PoolBuffer{ctx, address, bytes});
}

void CudaAsyncBackend::freeBuffer(BufferId buf) {
  const PoolBuffer buffer = takeBuffer(buf, "cuMemFreeAsync");
  makeCurrent(CallPoint::BufFree);
  auto owner = contexts_.find(buffer.owner);
  const CUstream stream = owner == contexts_.end() ? nullptr : owner->second.stream;
  if (stream != nullptr) {
    // Held: the owner's destroy on another thread must not begin its wait, or destroy the stream,
    // while this call hands the stream to the driver.
    const seam::KeepState keep;
    if (!owner->second.closing) {
      check(driver_.memFreeAsync(buffer.address, stream), CallPoint::BufFree, "cuMemFreeAsync");
      return;
    }
    // Its destroy is waiting for the stream: this free waits too, rather than join that wait's
    // work, then goes where freed buffers of destroyed contexts go.
    check(driver_.streamSynchronize(stream), CallPoint::BufFree, "cuStreamSynchronize");
  }
  check(freeOnReleaseStream(buffer), CallPoint::BufFree, "cuMemFreeAsync");
}

}  // namespace

std::unique_ptr<Backend> makeCudaAsyncBackend(int ordinal) {
  return std::make_unique<CudaAsyncBackend>(ordinal);
}

}  // namespace gpufuzz
