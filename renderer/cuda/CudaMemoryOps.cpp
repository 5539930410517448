// CudaMemoryOps.cpp: the cuda-driver executor's handlers of pools and their allocations, copies
// within and across devices, peer access and pinned host memory.
#include <algorithm>
#include <cstring>

#include "renderer/cuda/CudaDriverExecutorImpl.h"
#include "renderer/device/RuntimeSeam.h"

namespace gpufuzz::cudamodel {

// ---- Pools and their allocations ---------------------------------------------------------------

void CudaDriverExecutor::poolCreate(const ModelCall& c) {
  const std::string& name = c.names[0];
  const CUdevice device = deviceArg(c);
  current(*stateOf(device).primary, CallPoint::CtxCreate);
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  auto p = std::make_shared<Pool>();
  p->name = name;
  p->device = device;
  ok(driver_.memPoolCreate(&p->handle, &props), CallPoint::CtxCreate,
     "cuMemPoolCreate(" + name + ")");
  pools_.add(name, std::move(p));
}

void CudaDriverExecutor::poolSetThreshold(const ModelCall& c) {
  const std::shared_ptr<Pool> pool = pools_.named(c.names[0]);
  const Pool& p = *pool;
  currentPrimary(CallPoint::BufAlloc);
  cuuint64_t set = c.arg("bytes");
  ok(driver_.memPoolSetAttribute(p.handle, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &set),
     CallPoint::BufAlloc, "cuMemPoolSetAttribute(" + p.name + ", RELEASE_THRESHOLD)");
  cuuint64_t got = 0;
  ok(driver_.memPoolGetAttribute(p.handle, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &got),
     CallPoint::BufAlloc, "cuMemPoolGetAttribute(" + p.name + ", RELEASE_THRESHOLD)");
  if (got != set) {
    throw DeviceError(CallPoint::BufAlloc,
                      "cuMemPoolGetAttribute(" + p.name + ", RELEASE_THRESHOLD) returned " +
                          std::to_string(got) + " after cuMemPoolSetAttribute set " +
                          std::to_string(set));
  }
}

void CudaDriverExecutor::poolTrim(const ModelCall& c) {
  const std::shared_ptr<Pool> pool = pools_.named(c.names[0]);
  const Pool& p = *pool;
  currentPrimary(CallPoint::BufFree);
  ok(driver_.memPoolTrimTo(p.handle, c.arg("keep")), CallPoint::BufFree,
     "cuMemPoolTrimTo(" + p.name + ")");
}

void CudaDriverExecutor::poolDestroy(const ModelCall& c) {
  destroyPool(c.names[0]);
}

void CudaDriverExecutor::destroyPool(const std::string& name) {
  const std::shared_ptr<Pool> p = pools_.take(name);
  currentPrimary(CallPoint::CtxDestroy);
  // With allocations outstanding it returns at once, and the pool goes with the last of them
  // (documented): the allocations stay usable, and their frees on any stream are valid.
  ok(driver_.memPoolDestroy(p->handle), CallPoint::CtxDestroy, "cuMemPoolDestroy(" + name + ")");
}

void CudaDriverExecutor::alloc(const ModelCall& c) {
  const std::shared_ptr<Pool> pool = pools_.named(c.names[0]);
  const Pool& p = *pool;
  // The pool may be of another device than the stream (documented): the allocation is the pool's.
  const std::shared_ptr<Stream> s = target(c.names[1], CallPoint::BufAlloc);
  const std::string& name = c.names[2];
  auto b = std::make_shared<Buf>();
  b->name = name;
  b->pool = pool;
  b->bytes = c.arg("bytes");
  ok(driver_.memAllocFromPoolAsync(&b->address, b->bytes, p.handle, s->handle), CallPoint::BufAlloc,
     "cuMemAllocFromPoolAsync(" + name + ", " + p.name + ", " + c.names[1] + ")");
  // Work on another stream must be ordered after the allocation (documented).
  b->use.stream = s;
  b->shadow.assign(std::min(b->bytes, kShadowBytes), kUnknown);
  bufs_.add(name, std::move(b));
}

void CudaDriverExecutor::free(const ModelCall& c) {
  freeBuf(c.names[0], target(c.names[1], CallPoint::BufFree));
}

void CudaDriverExecutor::releaseBuf(const std::string& name) {
  // The stream is another name's, or the executor's own, which every name shares.
  const seam::KeepState keepStream;
  // Freed on the stream of its last work, where that needs no order of the executor's.
  const std::shared_ptr<Buf> buf = bufs_.named(name);
  const std::shared_ptr<Stream> last = buf->use.stream;
  const bool usable = last && !last->destroyed && !last->orphan();
  freeBuf(name, usable ? last : own_);
}

void CudaDriverExecutor::freeBuf(const std::string& name, std::shared_ptr<Stream> stream) {
  const std::shared_ptr<Buf> b = bufs_.take(name);
  current(*stream->ctx, CallPoint::BufFree);
  order(b->use, stream, CallPoint::BufFree);
  ok(driver_.memFreeAsync(b->address, stream->handle), CallPoint::BufFree,
     "cuMemFreeAsync(" + name + ", " + streamLabel(*stream) + ")");
}

void CudaDriverExecutor::memset(const ModelCall& c) {
  const std::shared_ptr<Buf> buf = bufs_.named(c.names[0]);
  Buf& b = *buf;
  const std::shared_ptr<Stream> s = target(c.names[1], CallPoint::CopyToDevice);
  // A detour enqueues on the executor's stream of the pool's device, which every name shares.
  const seam::KeepState keep(!b.reachableFrom(s->ctx->device));
  const std::shared_ptr<Stream> on = reaching(s, b, CallPoint::CopyToDevice);
  const auto value = static_cast<uint8_t>(c.arg("value"));
  order(b.use, on, CallPoint::CopyToDevice);
  ok(driver_.memsetD8Async(b.address, value, b.bytes, on->handle), CallPoint::CopyToDevice,
     "cuMemsetD8Async(" + b.name + ", " + streamLabel(*on) + ")");
  rejoin(s, on, CallPoint::CopyToDevice);
  std::fill(b.shadow.begin(), b.shadow.end(), static_cast<int16_t>(value));
}

void CudaDriverExecutor::memcpyDtoD(const ModelCall& c) {
  copyDevice(c, false);
}

void CudaDriverExecutor::memcpyPeer(const ModelCall& c) {
  copyDevice(c, true);
}

void CudaDriverExecutor::copyDevice(const ModelCall& c, bool peer) {
  const std::shared_ptr<Buf> dstBuf = bufs_.named(c.names[0]);
  const std::shared_ptr<Buf> srcBuf = bufs_.named(c.names[1]);
  Buf& dst = *dstBuf;
  Buf& src = *srcBuf;
  const std::shared_ptr<Stream> s = target(c.names[2], CallPoint::CopyToDevice);
  const size_t bytes = std::min(dst.bytes, src.bytes);
  order(dst.use, s, CallPoint::CopyToDevice);
  order(src.use, s, CallPoint::CopyToDevice);
  const std::string names = "(" + dst.name + ", " + src.name + ", " + c.names[2] + ")";
  const CUdevice device = s->ctx->device;
  if (!peer && dst.reachableFrom(device) && src.reachableFrom(device)) {
    ok(driver_.memcpyDtoDAsync(dst.address, src.address, bytes, s->handle), CallPoint::CopyToDevice,
       "cuMemcpyDtoDAsync" + names);
  } else {
    // A peer copy needs no access between the devices: asked for, or memory the stream's device
    // may not touch. Pool memory belongs to no context: each side names its device's primary
    // context, which the executor keeps retained.
    ok(driver_.memcpyPeerAsync(dst.address, stateOf(dst.pool->device).primary->handle, src.address,
                               stateOf(src.pool->device).primary->handle, bytes, s->handle),
       CallPoint::CopyToDevice, "cuMemcpyPeerAsync" + names);
  }
  std::copy_n(src.shadow.begin(), std::min(bytes, kShadowBytes), dst.shadow.begin());
}

void CudaDriverExecutor::readBack(const std::shared_ptr<Stream>& stream, CUdeviceptr src,
                                  size_t bytes, const Shadow& shadow, const std::string& call,
                                  const std::string& what) {
  std::vector<std::byte> got(bytes);
  ok(driver_.memcpyDtoHAsync(got.data(), src, bytes, stream->handle), CallPoint::CopyToHost, call);
  const std::string wait = "cuStreamSynchronize(" + streamLabel(*stream) + ")";
  const uint64_t records = stream->records;
  ok(driver_.streamSynchronize(stream->handle), CallPoint::CopyToHost, wait);
  {
    // The check reads events and tickets that other names' operations change.
    const seam::KeepState keep;
    checkStreamDone(*stream, stream->records == records, wait);
  }
  compare(shadow, got.data(), bytes, what);
}

void CudaDriverExecutor::read(const ModelCall& c) {
  const std::shared_ptr<Buf> buf = bufs_.named(c.names[0]);
  Buf& b = *buf;
  const std::shared_ptr<Stream> s = target(c.names[1], CallPoint::CopyToHost);
  // A detour reads on the executor's stream of the pool's device, which every name shares.
  const seam::KeepState keep(!b.reachableFrom(s->ctx->device));
  const std::shared_ptr<Stream> on = reaching(s, b, CallPoint::CopyToHost);
  order(b.use, on, CallPoint::CopyToHost);
  const size_t bytes = std::min(b.bytes, kShadowBytes);
  readBack(on, b.address, bytes, b.shadow, "cuMemcpyDtoHAsync(" + b.name + ", " + c.names[1] + ")",
           "buf " + b.name);
}

// ---- Across devices ----------------------------------------------------------------------------

void CudaDriverExecutor::peerEnable(const ModelCall& c) {
  // peers_ is kept by context, whatever the names: another pair of names for the same contexts
  // must not enable or disable between this call and its record.
  const seam::KeepState keep;
  const std::shared_ptr<Ctx> fromCtx = ctxs_.named(c.names[0]);
  const std::shared_ptr<Ctx> toCtx = ctxs_.named(c.names[1]);
  const Ctx& from = *fromCtx;
  const Ctx& to = *toCtx;
  int can = 0;
  ok(driver_.deviceCanAccessPeer(&can, from.device, to.device), CallPoint::CtxCreate,
     "cuDeviceCanAccessPeer(" + from.name + ", " + to.name + ")");
  current(from, CallPoint::CtxCreate);
  const std::string call = "cuCtxEnablePeerAccess(" + from.name + " to " + to.name + ")";
  const CUresult result = driver_.ctxEnablePeerAccess(to.handle, 0);
  const auto pair = std::make_pair(identity(from), identity(to));
  CUresult expected = CUDA_SUCCESS;
  if (from.handle == to.handle) {
    // Two retains of one primary context: "CUDA_ERROR_INVALID_CONTEXT if ... the current context
    // is peerContext". A device is never its own peer either, so where cuDeviceCanAccessPeer
    // says 0 the documented CUDA_ERROR_PEER_ACCESS_UNSUPPORTED is as right: the documentation
    // orders neither check, and NVIDIA's driver 580 returns that one.
    expected = CUDA_ERROR_INVALID_CONTEXT;
    if (can == 0 && result == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED) return;
  } else if (can == 0) {
    // Two contexts of one device, or devices without peer access: the documentation names
    // CUDA_ERROR_PEER_ACCESS_UNSUPPORTED where cuDeviceCanAccessPeer says no, but not what a
    // device and itself get. Any error is the operation's result; success is the finding.
    if (result != CUDA_SUCCESS) return;
    throw DeviceError(CallPoint::CtxCreate, call + ": CUDA_SUCCESS where cuDeviceCanAccessPeer(" +
                                                from.name + ", " + to.name + ") said 0");
  } else if (peers_.contains(pair)) {
    expected = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  }
  if (result != expected) {
    throw DeviceError(CallPoint::CtxCreate, call + ": " + driver_.errorName(result) +
                                                ", the documentation says " +
                                                driver_.errorName(expected));
  }
  if (expected == CUDA_SUCCESS) peers_.insert(pair);
}

void CudaDriverExecutor::peerDisable(const ModelCall& c) {
  // As peerEnable: the expected result depends on peers_, which other names change.
  const seam::KeepState keep;
  const std::shared_ptr<Ctx> fromCtx = ctxs_.named(c.names[0]);
  const std::shared_ptr<Ctx> toCtx = ctxs_.named(c.names[1]);
  const Ctx& from = *fromCtx;
  const Ctx& to = *toCtx;
  current(from, CallPoint::CtxDestroy);
  const std::string call = "cuCtxDisablePeerAccess(" + from.name + " to " + to.name + ")";
  const CUresult result = driver_.ctxDisablePeerAccess(to.handle);
  if (from.handle == to.handle) {
    // A context and itself: never enabled, and not a peer either; the documentation gives both
    // CUDA_ERROR_PEER_ACCESS_NOT_ENABLED and CUDA_ERROR_INVALID_CONTEXT. Any error is the result.
    if (result != CUDA_SUCCESS) return;
    throw DeviceError(CallPoint::CtxDestroy, call + ": CUDA_SUCCESS for a context and itself");
  }
  const auto pair = std::make_pair(identity(from), identity(to));
  const CUresult expected =
      peers_.contains(pair) ? CUDA_SUCCESS : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  if (result != expected) {
    throw DeviceError(CallPoint::CtxDestroy, call + ": " + driver_.errorName(result) +
                                                 ", the documentation says " +
                                                 driver_.errorName(expected));
  }
  peers_.erase(pair);
}

void CudaDriverExecutor::poolAccess(const ModelCall& c) {
  const std::shared_ptr<Pool> pool = pools_.named(c.names[0]);
  const std::shared_ptr<Ctx> held = ctxs_.named(c.names[1]);
  Pool& p = *pool;
  const Ctx& ctx = *held;
  // The pool's own device always has access; the documentation does not say what setting it
  // again does, so the executor makes no call for it.
  if (ctx.device == p.device) return;
  int can = 0;
  ok(driver_.deviceCanAccessPeer(&can, ctx.device, p.device), CallPoint::BufAlloc,
     "cuDeviceCanAccessPeer(" + ctx.name + ", " + p.name + ")");
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = ctx.device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  const std::string call =
      "cuMemPoolSetAccess(" + p.name + ", read-write for the device of " + ctx.name + ")";
  const CUresult result = driver_.memPoolSetAccess(p.handle, &access, 1);
  if (can == 0 && result != CUDA_SUCCESS) return;  // no peer access: its error is the result
  ok(result, CallPoint::BufAlloc, call);
  // Recorded once the call returned: other names' work may go to that device from then on.
  p.access.insert(ctx.device);
}

// ---- Pinned host memory ------------------------------------------------------------------------

void CudaDriverExecutor::hostAlloc(const ModelCall& c) {
  const std::string& name = c.names[0];
  // Portable, in the primary context that the executor keeps: no context destroy frees it.
  currentPrimary(CallPoint::BufAlloc);
  auto h = std::make_shared<HostBuf>();
  h->name = name;
  h->bytes = c.arg("bytes");
  void* host = nullptr;
  ok(driver_.memHostAlloc(&host, h->bytes, CU_MEMHOSTALLOC_PORTABLE), CallPoint::BufAlloc,
     "cuMemHostAlloc(" + name + ")");
  h->host = static_cast<std::byte*>(host);
  std::memset(h->host, 0, h->bytes);
  h->shadow.assign(h->bytes, 0);
  hostBufs_.add(name, std::move(h));
}

void CudaDriverExecutor::hostFill(const ModelCall& c) {
  const std::shared_ptr<HostBuf> host = hostBufs_.named(c.names[0]);
  HostBuf& h = *host;
  // A host write while a copy of it is pending is a data race: the executor waits first.
  currentPrimary(CallPoint::Sync);
  hostWait(h.use, CallPoint::Sync);
  const auto value = static_cast<uint8_t>(c.arg("value"));
  std::memset(h.host, value, h.bytes);
  std::fill(h.shadow.begin(), h.shadow.end(), static_cast<int16_t>(value));
}

template <typename Dst, typename Src, typename Copy>
void CudaDriverExecutor::copyWithHost(const ModelCall& c, Dst& dst, Src& src, const Buf& device,
                                      CallPoint point, const char* call, Copy copy) {
  const std::shared_ptr<Stream> s = target(c.names[2], point);
  // A detour copies on the executor's stream of the pool's device, which every name shares.
  const seam::KeepState keep(!device.reachableFrom(s->ctx->device));
  const std::shared_ptr<Stream> on = reaching(s, device, point);
  const size_t bytes = std::min(dst.bytes, src.bytes);
  order(dst.use, on, point);
  order(src.use, on, point);
  ok(copy(bytes, on->handle), point,
     std::string(call) + "(" + dst.name + ", " + src.name + ", " + streamLabel(*on) + ")");
  rejoin(s, on, point);
  std::copy_n(src.shadow.begin(), std::min(bytes, kShadowBytes), dst.shadow.begin());
}

void CudaDriverExecutor::memcpyHtoD(const ModelCall& c) {
  const std::shared_ptr<Buf> dst = bufs_.named(c.names[0]);
  const std::shared_ptr<HostBuf> src = hostBufs_.named(c.names[1]);
  copyWithHost(c, *dst, *src, *dst, CallPoint::CopyToDevice, "cuMemcpyHtoDAsync",
               [&](size_t bytes, CUstream on) {
                 return driver_.memcpyHtoDAsync(dst->address, src->host, bytes, on);
               });
}

void CudaDriverExecutor::memcpyDtoH(const ModelCall& c) {
  const std::shared_ptr<HostBuf> dst = hostBufs_.named(c.names[0]);
  const std::shared_ptr<Buf> src = bufs_.named(c.names[1]);
  copyWithHost(c, *dst, *src, *src, CallPoint::CopyToHost, "cuMemcpyDtoHAsync",
               [&](size_t bytes, CUstream on) {
                 return driver_.memcpyDtoHAsync(dst->host, src->address, bytes, on);
               });
}

void CudaDriverExecutor::hostCheck(const ModelCall& c) {
  const std::shared_ptr<HostBuf> host = hostBufs_.named(c.names[0]);
  HostBuf& h = *host;
  // Reading host memory a copy still writes is a data race: the executor waits first.
  currentPrimary(CallPoint::CopyToHost);
  hostWait(h.use, CallPoint::CopyToHost);
  compare(h.shadow, h.host, h.bytes, "hostbuf " + h.name);
}

void CudaDriverExecutor::hostFree(const ModelCall& c) {
  freeHost(c.names[0]);
}

void CudaDriverExecutor::freeHost(const std::string& name) {
  const std::shared_ptr<HostBuf> h = hostBufs_.take(name);
  // Freeing pinned memory a pending copy still uses is undefined: the executor waits first.
  currentPrimary(CallPoint::BufFree);
  hostWait(h->use, CallPoint::BufFree);
  ok(driver_.memFreeHost(h->host), CallPoint::BufFree, "cuMemFreeHost(" + name + ")");
}

}  // namespace gpufuzz::cudamodel
