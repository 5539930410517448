// CudaAsyncBackend.h: the cuda-async backend, the Backend contract on the CUDA driver's
// stream-ordered allocator, as current runtimes allocate (PyTorch's and CuPy's async allocators).
//
// The device's primary context is retained once per process and never released; every call
// makes it current. A context of this backend is a non-blocking stream and a memory pool of its
// own (cuMemPoolCreate) on that primary context, with no context of the driver's: creating one
// costs microseconds, not the ~120 ms of cuCtxCreate. The raster kernel's module is loaded once
// per backend. Buffers come from cuMemAllocFromPoolAsync on the context's stream and go back with
// cuMemFreeAsync. Copies and launches are enqueued on the stream; copyToHost and synchronize wait
// for it.
//
// destroyContext waits for the stream, destroys it and destroys the pool. The driver's
// cuMemPoolDestroy returns at once even with allocations outstanding and releases the pool once
// the last of them is freed: a buffer outlives its context's destroy, and freeing it later is
// valid (the seed's reference counting, done by the driver). Such a free is enqueued on the
// backend's own release stream and waited for, so that the pool is gone when freeBuffer returns.
//
// Failed calls throw DeviceError naming the driver call and the CUresult name; unknown handles,
// foreign buffers and sizes out of range throw DeviceError naming the call it would have made,
// without making it (HandleChecks.h), exactly as on the cuda backend.
//
// memoryInUse() counts live contexts and every buffer not yet freed through freeBuffer, whether
// or not its context is alive. A buffer stops being counted when freeBuffer is called on it.
//
// Not thread-safe: calls come one at a time, from any thread (the Device seam locks them). Their
// driver calls overlap other threads' (CudaStreamBackend.h), except a free on its live context's
// stream, which keeps the seam's lock so that the context's destroy never waits on, checks or
// destroys a stream that the free is being enqueued on. The destructor destroys the contexts
// still alive and frees the buffers still held, ignoring errors.
#pragma once

#include <memory>

#include "renderer/device/Backend.h"

namespace gpufuzz {

/// A cuda-async backend on the CUDA device `ordinal`. Throws DeviceUnavailable when the driver
/// cannot be loaded or initialised, lacks the stream-ordered allocator, or there is no such device
/// or it has no memory pools.
std::unique_ptr<Backend> makeCudaAsyncBackend(int ordinal = 0);

}  // namespace gpufuzz
