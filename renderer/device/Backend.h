// Backend.h: what a device backend implements. A backend knows nothing of renderers, fault plans
// or counters; the Device seam (Device.h) wraps it.
//
// The model is the seed's runtime: a context owns one in-order queue; buffers are owned by the
// context that allocated them; copies to the device and kernel launches are enqueued and not
// waited for; copyToHost waits for the context's queue, then copies; synchronize waits for it.
// Failed calls throw DeviceError naming the call and the runtime's error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "renderer/Raster.h"
#include "renderer/device/CallFailure.h"
#include "renderer/device/PendingWork.h"

namespace gpufuzz {

using ContextId = uint64_t;
using BufferId = uint64_t;

/// The one kernel: rasterize `triangleCount` triangles from `vertices` over `framebuffer`.
struct RasterLaunch {
  BufferId framebuffer = 0;
  BufferId vertices = 0;
  BufferId textures[raster::kMaxTextures] = {};
  uint32_t textureCount = 0;
  uint32_t textureSize = 0;
  uint32_t width = 0;
  uint32_t height = 0;
  uint32_t triangleCount = 0;
  /// XORed into every pixel the launch writes; nonzero only when a fault plan corrupts a launch.
  uint32_t corruptXor = 0;
};

/// Device memory a backend still holds: what a leak check looks at once everything is released.
struct MemoryInUse {
  uint64_t bytes = 0;
  uint64_t buffers = 0;
  uint64_t contexts = 0;
  bool operator==(const MemoryInUse&) const = default;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  /// What runs underneath, for reports, status lines and findings: platform, device and driver
  /// version where the runtime tells them ("pocl 3.1 / cpu-haswell / driver 3.1").
  virtual std::string description() const { return std::string(name()); }
  /// Whether its calls may come from several threads at once; otherwise the seam holds a
  /// seam::StateLock around each, which the backend's runtime calls let go (RuntimeSeam.h).
  virtual bool threadSafe() const { return false; }

  virtual ContextId createContext() = 0;
  /// Valid while the context's buffers live; what happens to them is the backend's business.
  virtual void destroyContext(ContextId ctx) = 0;
  virtual BufferId allocBuffer(ContextId ctx, uint64_t bytes) = 0;
  /// Valid after the owner is destroyed on backends that keep orphaned buffers.
  virtual void freeBuffer(BufferId buf) = 0;
  /// Enqueued; `src` may be reused as soon as the call returns.
  virtual void copyToDevice(ContextId ctx, BufferId dst, std::span<const std::byte> src) = 0;
  /// Waits for the context's queue, then copies `dst.size()` bytes from the start of `src`.
  virtual void copyToHost(ContextId ctx, BufferId src, std::span<std::byte> dst) = 0;
  /// Enqueued.
  virtual void launch(ContextId ctx, const RasterLaunch& launch) = 0;
  virtual void synchronize(ContextId ctx) = 0;

  /// Asked by the seam right after each wait on `ctx` returns (synchronize, copyToHost,
  /// destroyContext): the work enqueued before that wait that the runtime says has not
  /// completed, or nullopt when all of it has. After destroyContext the answer is what the
  /// backend found between its wait and the release, kept until asked.
  virtual std::optional<PendingWork> pendingAfterWait(ContextId ctx) = 0;

  virtual MemoryInUse memoryInUse() const = 0;
  /// The error this backend's runtime returns when a call at `point` fails with `kind`
  /// ("CUDA_ERROR_OUT_OF_MEMORY"), or none where the runtime has no such failure there: the
  /// Device seam fails a marked call with it (CallFailure.h).
  virtual std::optional<std::string> failureError(FailureKind kind, CallPoint point) const {
    (void)kind;
    (void)point;
    return std::nullopt;
  }
  /// Leaves about `bytes` of device memory to the run (--device-memory, docs/failures.md): the
  /// rest is taken now, through the runtime's own allocator, for the process's life. Throws
  /// DeviceError when taking it fails; false where the backend cannot bound its memory.
  virtual bool leaveDeviceMemory(uint64_t bytes) {
    (void)bytes;
    return false;
  }
};

}  // namespace gpufuzz
