// CudaCalls.h: what both CUDA backends do the same way on a stream, whoever owns its memory:
// failed calls as DeviceError, the stream's state after a wait, and the raster launch.
#pragma once

#include <cuda.h>

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "renderer/cuda/CudaDriver.h"
#include "renderer/device/Backend.h"
#include "renderer/device/CallPoint.h"
#include "renderer/device/PendingWork.h"

namespace gpufuzz::cuda {

/// The primary context of `device`, retained on first use and kept for the life of the process:
/// retaining it is most of a fresh process's start-up (~250-350 ms with cuInit), and releasing it
/// would throw away every pool and module made in it. Throws DeviceUnavailable when the retain
/// fails. Thread-safe.
CUcontext retainedPrimaryContext(const CudaDriver& driver, CUdevice device);

/// DeviceError at `point`, "<call>: <CUresult name>", unless `result` is CUDA_SUCCESS.
void check(const CudaDriver& driver, CUresult result, CallPoint point, const char* call);

/// What the stream's own state says of the work enqueued on it (cuStreamQuery), right after a
/// wait for it: nothing when it is complete.
std::optional<PendingWork> pendingOnStream(const CudaDriver& driver, CUstream stream);

/// Enqueues the upload of a copy of `src` (kept in `staged` until the stream is next waited for,
/// so the caller may reuse its memory at once) to `dst` on `stream`.
void enqueueUpload(const CudaDriver& driver, CUstream stream,
                   std::vector<std::vector<std::byte>>& staged, CUdeviceptr dst,
                   std::span<const std::byte> src);

/// Enqueues the download of `dst.size()` bytes from `src` on `stream` and waits for the stream,
/// releasing `staged`.
void downloadAndWait(const CudaDriver& driver, CUstream stream,
                     std::vector<std::vector<std::byte>>& staged, CUdeviceptr src,
                     std::span<std::byte> dst);

/// The device address of a buffer serving a launch as `role` ("framebuffer", "vertex",
/// "texture") with at least `bytes` bytes; throws DeviceError (CallPoint::Launch) otherwise.
using LaunchBufferAddress =
    std::function<CUdeviceptr(BufferId buffer, uint64_t bytes, const char* role)>;

/// Checks `launch` and enqueues the raster kernel for it on `stream`; `makeCurrent` runs right
/// before the driver call (not at all for an empty grid, which has nothing to do).
void enqueueRaster(const CudaDriver& driver, CUfunction kernel, CUstream stream,
                   const RasterLaunch& launch, const LaunchBufferAddress& address,
                   const std::function<void()>& makeCurrent);

}  // namespace gpufuzz::cuda
