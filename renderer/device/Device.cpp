// Device.cpp: the interception seam over a backend.
#include "renderer/device/Device.h"

#include <algorithm>
#include <vector>

#include "renderer/device/Turns.h"

namespace gpufuzz {

namespace {
void corruptBytes(std::span<std::byte> bytes) {
  for (std::byte& b : bytes)
    b ^= static_cast<std::byte>(kCorruptXor & 0xffU);
}
}  // namespace

/// One device call from its entry to its return: the snapshot, the interceptors' say, and the
/// call counted inside its point meanwhile.
class Device::Call {
 public:
  Call(Device& device, const CallSite& site) : device_(device), point_(site.point) {
    takeTurn();
    CounterSnapshot snapshot;
    {
      const std::lock_guard lock(device_.seam_);
      snapshot = device_.tracker_.beginCall(site);
      snapshot[Counter::Thread] = callerThread();
      for (const CallPoint p : kAllCallPoints)
        snapshot[insideCounter(p)] = device_.inside_[static_cast<std::size_t>(p)];
      ++device_.inside_[static_cast<std::size_t>(point_)];
    }
    try {
      device_.failIfArmed(site);
      for (const auto& interceptor : device_.interceptors_) {
        const Alteration a = interceptor->before(site, snapshot);
        alteration.corrupt = alteration.corrupt || a.corrupt;
        alteration.leak = alteration.leak || a.leak;
      }
    } catch (...) {
      leave();
      throw;
    }
    takeTurn(/*inside=*/true);
  }
  ~Call() { leave(); }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  Alteration alteration;

 private:
  void leave() {
    if (left_) return;
    left_ = true;
    const std::lock_guard lock(device_.seam_);
    --device_.inside_[static_cast<std::size_t>(point_)];
  }
  Device& device_;
  CallPoint point_;
  bool left_ = false;
};

Device::Device(std::unique_ptr<Backend> backend) : backend_(std::move(backend)) {}

namespace {
/// The failure armed on this thread, for the device it was armed on.
struct Armed {
  const Device* device = nullptr;
  CallFailure failure;
  uint32_t seen = 0;
  bool fired = false;
};
thread_local Armed tArmed;
}  // namespace

void Device::arm(const CallFailure& failure) {
  tArmed = Armed{this, failure, 0, false};
}

bool Device::disarm() {
  const bool fired = tArmed.device == this && tArmed.fired;
  tArmed = Armed{};
  return fired;
}

bool Device::canFail(FailureKind kind) const {
  for (const CallPoint p : kAllCallPoints) {
    if (canFailWith(p, kind) && backend_->failureError(kind, p)) return true;
  }
  return false;
}

void Device::failIfArmed(const CallSite& site) {
  Armed& a = tArmed;
  if (a.device != this || a.fired || !canFailWith(site.point, a.failure.kind)) return;
  const std::optional<std::string> error = backend_->failureError(a.failure.kind, site.point);
  if (!error || ++a.seen != a.failure.nth) return;
  a.fired = true;
  {
    const std::lock_guard lock(seam_);
    tracker_.callInjected(site);
  }
  throw InjectedFailure(site.point, a.failure.kind,
                        std::string(callPointName(site.point)) + ": " + *error + " (injected, " +
                            std::string(failureKindText(a.failure.kind)) + ", call " +
                            std::to_string(a.seen) + ")");
}

void Device::addInterceptor(std::shared_ptr<Interceptor> interceptor) {
  interceptors_.push_back(std::move(interceptor));
}

seam::StateLock Device::backendLock() const {
  return seam::StateLock(backend_->threadSafe() ? nullptr : &backendMutex_);
}

void Device::checkWait(CallPoint point, ContextId ctx) {
  const std::optional<PendingWork> pending = [&] {
    const auto lock = backendLock();
    return backend_->pendingAfterWait(ctx);
  }();
  if (!pending) return;
  throw DeviceError(point, pending->waitCall + " returned while " + pending->pending);
}

void Device::countIfExhausted(const CallSite& site, const DeviceError& error) {
  if (!ranOutForReal(error.what(), canFailWith(site.point, FailureKind::DeviceMemory))) return;
  const std::lock_guard lock(seam_);
  tracker_.callInjected(site);
}

ContextId Device::createContext() {
  const CallSite site{CallPoint::CtxCreate, std::nullopt, std::nullopt};
  const Call call(*this, site);
  const ContextId ctx = makeCounted(site, [&] { return backend_->createContext(); });
  tracked([&](LifecycleTracker& t) { t.contextCreated(ctx); });
  return ctx;
}

void Device::destroyContext(ContextId ctx) {
  const Call call(*this, CallSite{CallPoint::CtxDestroy, ctx, std::nullopt});
  tracked([&](LifecycleTracker& t) { t.contextDestroyed(ctx); });
  if (call.alteration.leak) return;
  {
    const auto lock = backendLock();
    backend_->destroyContext(ctx);
  }
  checkWait(CallPoint::CtxDestroy, ctx);
}

BufferId Device::allocBuffer(ContextId ctx, uint64_t bytes) {
  const CallSite site{CallPoint::BufAlloc, ctx, std::nullopt};
  const Call call(*this, site);
  const BufferId buf = makeCounted(site, [&] { return backend_->allocBuffer(ctx, bytes); });
  tracked([&](LifecycleTracker& t) { t.bufferAllocated(ctx, buf); });
  return buf;
}

void Device::freeBuffer(BufferId buf) {
  const std::optional<ContextId> owner =
      tracked([&](LifecycleTracker& t) { return t.ownerOf(buf); });
  const Call call(*this, CallSite{CallPoint::BufFree, owner, buf});
  tracked([&](LifecycleTracker& t) { t.bufferFreed(buf); });
  if (call.alteration.leak) return;
  const auto lock = backendLock();
  backend_->freeBuffer(buf);
}

void Device::copyToDevice(ContextId ctx, BufferId dst, std::span<const std::byte> src) {
  const Call call(*this, CallSite{CallPoint::CopyToDevice, ctx, dst});
  tracked([&](LifecycleTracker& t) { t.commandEnqueued(ctx, {dst}); });
  const auto lock = backendLock();
  if (!call.alteration.corrupt) {
    backend_->copyToDevice(ctx, dst, src);
    return;
  }
  std::vector<std::byte> altered(src.begin(), src.end());
  corruptBytes(altered);
  backend_->copyToDevice(ctx, dst, altered);
}

void Device::copyToHost(ContextId ctx, BufferId src, std::span<std::byte> dst) {
  const Call call(*this, CallSite{CallPoint::CopyToHost, ctx, src});
  {
    const auto lock = backendLock();
    backend_->copyToHost(ctx, src, dst);
  }
  checkWait(CallPoint::CopyToHost, ctx);
  tracked([&](LifecycleTracker& t) { t.queueDrained(ctx); });
  if (call.alteration.corrupt) corruptBytes(dst);
}

void Device::launch(ContextId ctx, const RasterLaunch& launch) {
  const Call call(*this, CallSite{CallPoint::Launch, ctx, std::nullopt});
  std::vector<BufferId> refs = {launch.framebuffer, launch.vertices};
  // Clamped: an out-of-range count is the backend's to reject, not the seam's to read past.
  const uint32_t textures = std::min(launch.textureCount, raster::kMaxTextures);
  refs.insert(refs.end(), launch.textures, launch.textures + textures);
  tracked([&](LifecycleTracker& t) { t.commandEnqueued(ctx, std::move(refs)); });
  const auto lock = backendLock();
  if (!call.alteration.corrupt) {
    backend_->launch(ctx, launch);
    return;
  }
  RasterLaunch altered = launch;
  altered.corruptXor = kCorruptXor;
  backend_->launch(ctx, altered);
}

void Device::synchronize(ContextId ctx) {
  const Call call(*this, CallSite{CallPoint::Sync, ctx, std::nullopt});
  {
    const auto lock = backendLock();
    backend_->synchronize(ctx);
  }
  checkWait(CallPoint::Sync, ctx);
  tracked([&](LifecycleTracker& t) { t.queueDrained(ctx); });
}

}  // namespace gpufuzz
