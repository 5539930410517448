// OpenClModelExecutor.h: the runtime model `opencl` (model/models/opencl.model) on OpenCL itself,
// through the backend's ICD loader (OpenClApi.h) on the device --device selects.
//
// The contract, beyond ModelExecutor's:
// - Each operation is the OpenCL call it is named for, on the objects its names stand for. The
//   model's names keep liveness, so no call reaches an object released to zero. Ending an owner
//   is a reference-counted release: a buffer, queue or program keeps its context alive, a kernel
//   its program, a sub-buffer its parent; their later uses are defined and are made.
// - Waits are checked (the wait-completion oracle, eventAfterWait in OpenClApi.h): after
//   clFinish, a blocking read or clWaitForEvents returns, every command it waited for, and every
//   command those waited for, must be CL_COMPLETE; else `error` names the wait and the stale
//   command ("clFinish q0 returned while 1 command enqueued before it was CL_QUEUED
//   (clEnqueueWriteBuffer b0, operation 3)").
// - Callbacks are checked where the spec promises them: a CL_COMPLETE event callback must run
//   once a wait saw its event complete; a memory object's destructor callbacks must run, last
//   registered first, once it is released, its sub-buffers are released, no live kernel holds it
//   as an argument, and its commands are complete with their events released. Each gets
//   kCallbackGraceMs, since callbacks run on the runtime's threads.
// - Contents are checked: writes, fills, copies and kernels are applied to a host shadow of each
//   buffer, image and SVM allocation; a read that differs is DataMismatch. Commands on one
//   memory object are kept in the sequence's order: a command on another queue, or on an
//   out-of-order queue, waits for the previous command on that memory (as SYCL's accessors do).
//   On one in-order queue the queue's own order is relied on, and so checked.
// - Where OpenCL says "undefined", the executor keeps the call defined (see the .cpp):
//   - Unset user events that enqueued commands wait on are set to CL_COMPLETE before any blocking
//     wait and before any release of a non-event object (the spec makes such a release undefined,
//     and the wait would block forever by design). They are also set before an enqueue while such
//     a release runs on another thread. The executor holds its own reference on every user event
//     until it is set, so one released unset is still set later.
//   - clSVMFree waits for the commands that use the allocation first; the executor holds a
//     reference on an SVM allocation's context until the allocation is freed.
//   - Objects of different contexts in one call: where the spec names the error
//     (CL_INVALID_CONTEXT) the call is made and must fail with it, and the operation then has no
//     effect (a marker's event is absent: later uses of it do nothing). Where it names none (a
//     kernel argument, an SVM pointer of another context) the operation does nothing.
// - Devices without a feature: an out-of-order queue is made in order; images and SVM
//   operations do nothing (CL_DEVICE_IMAGE_SUPPORT, CL_DEVICE_SVM_CAPABILITIES), so a campaign
//   on such a device reports no false findings.
// - leaked(): everything is released by then; the executor lets the commands left run out, then
//   reports memory objects whose destructor callbacks never ran and event callbacks that never
//   did (within kCallbackGraceMs).
// - Threads: the runner holds the executor's own state under seam::StateLock, one operation at a
//   time. Each OpenCL call lets that lock go, so operations on different names overlap inside
//   OpenCL. An operation overlaps where its calls touch only objects its own names hold: creates,
//   builds, releases, clSetKernelArg, and the blocking waits themselves. It keeps the lock
//   (seam::KeepState) where it hands OpenCL other names' objects or walks state they change.
//   Those steps are the checks after waits, flushes of other queues and early user-event sets.
//   An enqueue on a buffer that has sub-buffers also keeps it, since their order and shadow are
//   shared. Another command's event in a wait list stays retained by the executor until the call
//   returns.
#pragma once

#include <memory>
#include <string_view>

#include "renderer/device/ExecutorKit.h"
#include "renderer/device/ModelExecutor.h"
#include "renderer/opencl/OpenClApi.h"

namespace gpufuzz {

/// How long a callback the spec promises may take to run on the runtime's threads.
inline constexpr int kCallbackGraceMs = 5000;

/// The executor of model `opencl` on the device `deviceText` selects (OpenClDevices.h). Throws
/// DeviceUnavailable when OpenCL or the device is missing.
std::unique_ptr<ModelExecutor> makeOpenClModelExecutor(std::string_view deviceText = {});

/// The same through `api`, a table tests may alter to stand in for a misbehaving runtime, with
/// `callbackGraceMs` in place of kCallbackGraceMs.
std::unique_ptr<ModelExecutor> makeOpenClModelExecutor(const OpenClApi& api,
                                                       std::string_view deviceText,
                                                       int callbackGraceMs);

/// The executor's table of operations, for the test that compares it with
/// model/models/opencl.model.
kit::TableShape openClExecutorTable();

}  // namespace gpufuzz
