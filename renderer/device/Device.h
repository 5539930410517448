// Device.h: the one interception seam. Every device call the renderer (or a bare sequence) makes
// goes through Device, which keeps the lifecycle counters and lets interceptors (fault plans,
// traces) act on each call before it takes effect, over any backend, without touching it.
//
// Contract of a call: the seam takes the counter snapshot, offers it to each interceptor in
// order (an interceptor may block, kill the process, throw DeviceError, delay, or ask for the
// call's output to be corrupted or its memory leaked), then records the call in the tracker and
// forwards it to the backend. After each wait (sync, copy_to_host, ctx_destroy) it asks the
// backend whether the runtime still holds work enqueued before the wait, and throws DeviceError
// ("clFinish returned while 1 command enqueued before it was CL_QUEUED") when it does.
//
// Threads (docs/sequences.md, Threads): calls may come from several threads at once. The snapshot
// and the counters are taken under one lock, in the order calls enter, with the calling thread
// (`thread`) and how many other threads are inside a call at each point (`inside_POINT`). A call
// is inside from its entry to its return, a blocking interceptor included. The backend is called
// under a second lock unless it says it is thread-safe. Under a schedule (Turns.h) each call has
// two scheduling points: at its entry, and once it is inside, before the backend acts, so that
// other threads' calls can enter while it is inside.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "renderer/device/Backend.h"
#include "renderer/device/DeviceError.h"
#include "renderer/device/LifecycleCounters.h"
#include "renderer/device/RuntimeSeam.h"

namespace gpufuzz {

/// What an interceptor asks of the call it was offered.
struct Alteration {
  /// launch: XOR its output; copy_to_device: alter the uploaded bytes; copy_to_host: alter the
  /// host copy.
  bool corrupt = false;
  /// buf_free / ctx_destroy: report success but never return the memory.
  bool leak = false;
};

class Interceptor {
 public:
  virtual ~Interceptor() = default;
  /// Called before the call takes effect, with the counters as they stand. May block forever,
  /// kill the process, throw DeviceError, or sleep, as well as return an Alteration.
  virtual Alteration before(const CallSite& site, const CounterSnapshot& counters) = 0;
};

/// The XOR mask a corrupting fault applies to every byte or pixel it alters.
inline constexpr uint32_t kCorruptXor = 0x5a5a5a5aU;

class Device {
 public:
  explicit Device(std::unique_ptr<Backend> backend);

  /// Interceptors see every call, in the order added.
  void addInterceptor(std::shared_ptr<Interceptor> interceptor);

  ContextId createContext();
  void destroyContext(ContextId ctx);
  BufferId allocBuffer(ContextId ctx, uint64_t bytes);
  void freeBuffer(BufferId buf);
  void copyToDevice(ContextId ctx, BufferId dst, std::span<const std::byte> src);
  void copyToHost(ContextId ctx, BufferId src, std::span<std::byte> dst);
  void launch(ContextId ctx, const RasterLaunch& launch);
  void synchronize(ContextId ctx);

  MemoryInUse memoryInUse() const {
    const auto lock = backendLock();
    return backend_->memoryInUse();
  }
  /// Until disarm() on this thread, the failure.nth-th call of this thread that can fail with
  /// failure.kind (canFailWith) fails before it reaches the backend: InjectedFailure, with the
  /// backend's error for it. Fault plans then count it as `injected`.
  void arm(const CallFailure& failure);
  /// Ends this thread's armed failure: whether its call came and failed.
  bool disarm();
  /// Whether the backend's runtime can fail some call with `kind` (failureError).
  bool canFail(FailureKind kind) const;

  /// Backend::leaveDeviceMemory.
  bool leaveDeviceMemory(uint64_t bytes) { return backend_->leaveDeviceMemory(bytes); }
  std::string_view backendName() const { return backend_->name(); }
  std::string backendDescription() const { return backend_->description(); }
  /// Read when no call is in flight.
  const LifecycleTracker& tracker() const { return tracker_; }

 private:
  class Call;
  /// Throws InjectedFailure when this thread's armed failure is due at `site`.
  void failIfArmed(const CallSite& site);
  /// `make()`, a backend call at `site` that makes memory, under the backend's lock. One that
  /// runs out for real under --device-memory counts as `injected` and `ctx_injected`, as a marked
  /// one does (docs/failures.md).
  template <typename Make>
  auto makeCounted(const CallSite& site, Make make) {
    try {
      const auto lock = backendLock();
      return make();
    } catch (const DeviceError& e) {
      countIfExhausted(site, e);
      throw;
    }
  }
  void countIfExhausted(const CallSite& site, const DeviceError& error);
  /// Throws DeviceError at `point` when the wait just made on `ctx` returned early.
  void checkWait(CallPoint point, ContextId ctx);
  /// Held around every backend call, unless the backend is thread-safe; let go while the
  /// backend is inside its runtime (seam::StateLock), so that threads' runtime calls overlap.
  seam::StateLock backendLock() const;
  /// Runs `f` on the tracker under the seam's lock.
  template <typename F>
  auto tracked(F f) {
    const std::lock_guard lock(seam_);
    return f(tracker_);
  }

  std::unique_ptr<Backend> backend_;
  std::vector<std::shared_ptr<Interceptor>> interceptors_;
  LifecycleTracker tracker_;
  std::mutex seam_;
  mutable std::mutex backendMutex_;
  /// Threads inside a call, by point.
  std::array<uint64_t, kAllCallPoints.size()> inside_{};
};

}  // namespace gpufuzz
