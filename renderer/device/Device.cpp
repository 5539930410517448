// Device.cpp: the interception seam over a backend.
#include "renderer/device/Device.h"

#include <algorithm>
#include <vector>

namespace gpufuzz {

namespace {
void corruptBytes(std::span<std::byte> bytes) {
  for (std::byte& b : bytes)
    b ^= static_cast<std::byte>(kCorruptXor & 0xffU);
}
}  // namespace

Device::Device(std::unique_ptr<Backend> backend) : backend_(std::move(backend)) {}

void Device::addInterceptor(std::shared_ptr<Interceptor> interceptor) {
  interceptors_.push_back(std::move(interceptor));
}

void Device::checkWait(CallPoint point, ContextId ctx) {
  const std::optional<PendingWork> pending = backend_->pendingAfterWait(ctx);
  if (!pending) return;
  throw DeviceError(point, pending->waitCall + " returned while " + pending->pending);
}

Alteration Device::intercept(const CallSite& site) {
  const CounterSnapshot snapshot = tracker_.beginCall(site);
  Alteration result;
  for (const auto& interceptor : interceptors_) {
    const Alteration a = interceptor->before(site, snapshot);
    result.corrupt = result.corrupt || a.corrupt;
    result.leak = result.leak || a.leak;
  }
  return result;
}

ContextId Device::createContext() {
  intercept(CallSite{CallPoint::CtxCreate, std::nullopt, std::nullopt});
  const ContextId ctx = backend_->createContext();
  tracker_.contextCreated(ctx);
  return ctx;
}

void Device::destroyContext(ContextId ctx) {
  const Alteration a = intercept(CallSite{CallPoint::CtxDestroy, ctx, std::nullopt});
  tracker_.contextDestroyed(ctx);
  if (a.leak) return;
  backend_->destroyContext(ctx);
  checkWait(CallPoint::CtxDestroy, ctx);
}

BufferId Device::allocBuffer(ContextId ctx, uint64_t bytes) {
  intercept(CallSite{CallPoint::BufAlloc, ctx, std::nullopt});
  const BufferId buf = backend_->allocBuffer(ctx, bytes);
  tracker_.bufferAllocated(ctx, buf);
  return buf;
}

void Device::freeBuffer(BufferId buf) {
  const Alteration a = intercept(CallSite{CallPoint::BufFree, tracker_.ownerOf(buf), buf});
  tracker_.bufferFreed(buf);
  if (a.leak) return;
  backend_->freeBuffer(buf);
}

void Device::copyToDevice(ContextId ctx, BufferId dst, std::span<const std::byte> src) {
  const Alteration a = intercept(CallSite{CallPoint::CopyToDevice, ctx, dst});
  tracker_.commandEnqueued(ctx, {dst});
  if (!a.corrupt) {
    backend_->copyToDevice(ctx, dst, src);
    return;
  }
  std::vector<std::byte> altered(src.begin(), src.end());
  corruptBytes(altered);
  backend_->copyToDevice(ctx, dst, altered);
}

void Device::copyToHost(ContextId ctx, BufferId src, std::span<std::byte> dst) {
  const Alteration a = intercept(CallSite{CallPoint::CopyToHost, ctx, src});
  backend_->copyToHost(ctx, src, dst);
  checkWait(CallPoint::CopyToHost, ctx);
  tracker_.queueDrained(ctx);
  if (a.corrupt) corruptBytes(dst);
}

void Device::launch(ContextId ctx, const RasterLaunch& launch) {
  const Alteration a = intercept(CallSite{CallPoint::Launch, ctx, std::nullopt});
  std::vector<BufferId> refs = {launch.framebuffer, launch.vertices};
  // Clamped: an out-of-range count is the backend's to reject, not the seam's to read past.
  const uint32_t textures = std::min(launch.textureCount, raster::kMaxTextures);
  refs.insert(refs.end(), launch.textures, launch.textures + textures);
  tracker_.commandEnqueued(ctx, std::move(refs));
  if (!a.corrupt) {
    backend_->launch(ctx, launch);
    return;
  }
  RasterLaunch altered = launch;
  altered.corruptXor = kCorruptXor;
  backend_->launch(ctx, altered);
}

void Device::synchronize(ContextId ctx) {
  intercept(CallSite{CallPoint::Sync, ctx, std::nullopt});
  backend_->synchronize(ctx);
  checkWait(CallPoint::Sync, ctx);
  tracker_.queueDrained(ctx);
}

}  // namespace gpufuzz
