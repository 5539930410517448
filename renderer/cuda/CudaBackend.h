// CudaBackend.h: the cuda backend, the Backend contract on the CUDA driver API.
//
// Each context is a CUcontext (default settings) with one non-blocking stream, the in-order
// queue, and its own copy of the raster kernel's module. Buffers are cuMemAlloc allocations owned
// by the context that made them. Copies and launches are enqueued on the stream; copyToHost and
// synchronize wait for it. The driver is loaded at run time (CudaDriver.h): nothing links
// libcuda, and a machine without the driver or a device gets DeviceUnavailable, not a crash.
//
// Every failed call throws DeviceError naming the driver call and the CUresult name, e.g.
// "cuMemFree: CUDA_ERROR_INVALID_VALUE"; a handle the backend does not know, a buffer of another
// context, or a size out of range throws DeviceError naming the call it would have made, without
// making it.
//
// A context destroyed before its buffers follows the driver: cuCtxDestroy frees the context's
// allocations, so a later freeBuffer of one of them always throws DeviceError, never succeeds
// quietly. If its address now belongs to a live allocation made through any cuda backend of this
// process, or a cuMemAlloc of one is in flight on another thread (it may get the address),
// cuMemFree is not called (it would free that allocation instead); otherwise cuMemFree is
// called with whatever context is current and its error reported, and an unexpected
// CUDA_SUCCESS is reported as the undefined behaviour it is.
//
// memoryInUse() counts live contexts and every buffer not yet freed through freeBuffer,
// including buffers orphaned by their context's destroy (their memory went with the context, but
// the free they still owe is what a leak check looks for, as on every backend). A buffer stops
// being counted when freeBuffer is called on it, whether or not the driver call succeeds.
//
// Not thread-safe: calls come one at a time, from any thread (the Device seam locks them), and
// each call makes its context current on the calling thread. Their driver calls overlap other
// threads' (CudaStreamBackend.h), except a free's and a context's cuCtxDestroy: each keeps the
// seam's lock, so that a free always runs in a live context. The destructor destroys the
// contexts still alive, ignoring errors.
#pragma once

#include <memory>

#include "renderer/device/Backend.h"

namespace gpufuzz {

/// A backend on the CUDA device `ordinal`. Throws DeviceUnavailable when the driver cannot be
/// loaded or initialised, or there is no such device.
std::unique_ptr<Backend> makeCudaBackend(int ordinal = 0);

}  // namespace gpufuzz
