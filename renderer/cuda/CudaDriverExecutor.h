// CudaDriverExecutor.h: the cuda-driver runtime model (model/models/cuda-driver.model,
// docs/models.md) on the CUDA driver API, for the cuda and cuda-async backends alike.
//
// The contract (ModelExecutor.h), and what this executor adds to it:
// - Each operation makes the driver calls its name says, with the context its names belong to
//   made current first. A failed call throws DeviceError naming the call, the model's names and
//   the CUresult.
// - Devices: `ordinal` is the executor's own; the model's `device=k` names the k-th device after
//   it, modulo the devices present. Pool memory touched from a device the pool gave no access runs
//   on a stream of the pool's device instead (copies between two devices become peer copies).
// - Where the documentation gives an error code for an order the model allows, the call is made
//   and that exact code is the operation's result; any other result is a DeviceError.
// - Where the documentation leaves an order undefined, the executor keeps it defined (each case is
//   commented in the .cpp): it orders work across streams with events of its own, waits before
//   host memory or a mapping goes, and runs an operation on a stream of a destroyed context on a
//   stream of its own instead.
// - Bytes written by memsets and copies are tracked in a host shadow; read, map_read, host_check
//   and an executable graph's destroy compare, and throw DataMismatch.
// - The wait-completion oracle: after every wait of the model returns (cuStreamSynchronize,
//   cuEventSynchronize, cuCtxSynchronize, and the events a stream waited for), cuStreamQuery and
//   cuEventQuery must say CUDA_SUCCESS and every host function enqueued before must have run; else
//   DeviceError naming the wait and what was still pending. A query is skipped where another
//   thread's operation enqueued on that stream, or recorded that event, after the wait began.
// - Each device's primary context is retained for the life of the process besides the model's
//   retains, so releasing a model's retain never resets it (nor ends its peer access).
// - Threads: threadSafe() is false, so the runner runs each call under one seam::StateLock.
//   Each driver call lets go of that lock, so calls of operations on different names overlap.
//   The executor's records change only between driver calls, one thread at a time.
//   Steps that hand the driver another name's object keep the lock across their calls
//   (seam::KeepState). So do steps on the executor's own streams, and the checks after waits.
//   An operation on a stream, event or graph of a ctx_create context keeps it throughout.
//   Another name's ctx_destroy ends those objects, and cuCtxDestroy must meet no call on them.
//   ctx_sync, peer_enable, peer_disable, graph captures and the virtual-memory operations on
//   mappings keep it too.
#pragma once

#include <memory>
#include <string_view>

#include "renderer/device/ExecutorKit.h"
#include "renderer/device/ModelExecutor.h"

namespace gpufuzz {

/// The cuda-driver executor of backend `backend` ("cuda", "cuda-async") on CUDA device
/// `ordinal`. Throws DeviceUnavailable when the driver cannot be loaded, lacks an entry point
/// the model needs, or has no such device.
std::unique_ptr<ModelExecutor> makeCudaDriverExecutor(std::string_view backend, int ordinal);

/// The executor's table of operations, for the test that compares it with
/// model/models/cuda-driver.model.
kit::TableShape cudaDriverExecutorTable();

}  // namespace gpufuzz
