// OpenClEventOps.cpp: the opencl executor's handlers of programs, kernels and events: markers,
// barriers, waits, user events and event callbacks.
#include <utility>

#include "renderer/device/RuntimeSeam.h"
#include "renderer/opencl/OpenClModelExecutorImpl.h"
#include "renderer/opencl/RasterProgram.h"

namespace gpufuzz::clmodel {

namespace {

/// The kernel of enqueue_ndrange_kernel: word i of the buffer becomes patternWord(i, seed).
constexpr const char kPatternSource[] = R"CL(
__kernel void gpufuzzPattern(__global uint* words, uint seed) {
  const size_t i = get_global_id(0);
  words[i] = ((uint)i * 2654435761u) ^ seed;
}
)CL";
constexpr const char* kPatternKernel = "gpufuzzPattern";

void CL_CALLBACK eventCallback(cl_event, cl_int status, void* data) {
  auto* record = static_cast<EventCallbackRecord*>(data);
  record->status = status;
  ++record->calls;
}

}  // namespace

// ---- programs and kernels ----------------------------------------------------------------------

void OpenClModelExecutor::buildProgram(const ModelCall& call) {
  Program program;
  program.ctx = contexts_.named(call.names[0]);
  program.handle = opencl::buildCachedProgram(api_, program.ctx, device_.device, kPatternSource,
                                              "pattern", CallPoint::Launch);
  programs_.add(call.names[1], program);
}

void OpenClModelExecutor::releaseProgram(const ModelCall& call) {
  completeUserEvents();
  const Program program = programs_.take(call.names[0]);
  check(releasing([&] { return api_.releaseProgram(program.handle); }), CallPoint::Launch,
        "clReleaseProgram");
}

void OpenClModelExecutor::createKernel(const ModelCall& call) {
  const Program& program = programs_.named(call.names[0]);
  cl_int status = CL_SUCCESS;
  Kernel kernel;
  kernel.handle = api_.createKernel(program.handle, kPatternKernel, &status);
  check(status, CallPoint::Launch, "clCreateKernel");
  kernel.ctx = program.ctx;
  kernels_.add(call.names[1], std::move(kernel));
}

void OpenClModelExecutor::releaseKernel(const ModelCall& call) {
  completeUserEvents();
  Kernel kernel = kernels_.take(call.names[0]);
  check(releasing([&] { return api_.releaseKernel(kernel.handle); }), CallPoint::Launch,
        "clReleaseKernel");
  // Only once the release returned: another thread's checkCallbacks then expects the argument's
  // destructor callbacks.
  if (kernel.arg) --kernel.arg->kernelHolds;
}

void OpenClModelExecutor::ndrange(const ModelCall& call) {
  Queue& queue = queues_.named(call.names[0]);
  Kernel& kernel = kernels_.named(call.names[1]);
  const MemObjectPtr& buffer = buffers_.named(call.names[2]);
  // A buffer of another context than the kernel's: clSetKernelArg names no error for it.
  if (buffer->ctx != kernel.ctx) return;
  const auto seed = static_cast<cl_uint>(call.arg("seed"));
  // OpenCL leaves clSetKernelArg on one kernel to the caller to serialise: the runner never runs
  // two operations on one kernel's name at once, so these calls overlap other names' calls.
  check(api_.setKernelArg(kernel.handle, 0, sizeof(cl_mem), &buffer->mem), CallPoint::Launch,
        "clSetKernelArg");
  check(api_.setKernelArg(kernel.handle, 1, sizeof seed, &seed), CallPoint::Launch,
        "clSetKernelArg");
  if (kernel.arg) --kernel.arg->kernelHolds;
  kernel.arg = buffer;
  ++buffer->kernelHolds;
  const size_t words = buffer->bytes / 4;
  const CommandPtr node = enqueue(
      call, "clEnqueueNDRangeKernel", queue, {kernel.ctx}, {buffer->memory.get()},
      listOf(call, 3, 0),
      [&](cl_uint n, const cl_event* list, cl_event* made) {
        return api_.enqueueNDRangeKernel(queue.handle, kernel.handle, 1, nullptr, &words, nullptr,
                                         n, list, made);
      },
      CallPoint::Launch);
  if (node)
    buffer->memory->shadow.assign(0, words * 4, Generated{Generated::Kind::Kernel, seed, 0});
}
// ---- events ------------------------------------------------------------------------------------

void OpenClModelExecutor::marker(const ModelCall& call) {
  Queue& queue = queues_.named(call.names[0]);
  const std::string& name = call.names.back();
  const CommandPtr node = enqueue(
      call, "clEnqueueMarkerWithWaitList", queue, {}, {}, listOf(call, 1, 1),
      [&](cl_uint n, const cl_event* list, cl_event* made) {
        return api_.enqueueMarkerWithWaitList(queue.handle, n, list, made);
      },
      CallPoint::Launch, /*waitsForAll=*/true);
  Event event;
  event.ctx = queue.ctx;
  if (node) {
    // Overlaps: only operations on this queue or this event reach the new command, and the
    // runner holds those back until this one ends.
    check(api_.retainEvent(node->event), CallPoint::Launch, "clRetainEvent");
    event.handle = node->event;
    event.node = node;
  }
  events_.add(name, std::move(event));
}

void OpenClModelExecutor::barrier(const ModelCall& call) {
  Queue& queue = queues_.named(call.names[0]);
  const CommandPtr node = enqueue(
      call, "clEnqueueBarrierWithWaitList", queue, {}, {}, listOf(call, 1, 0),
      [&](cl_uint n, const cl_event* list, cl_event* made) {
        return api_.enqueueBarrierWithWaitList(queue.handle, n, list, made);
      },
      CallPoint::Launch, /*waitsForAll=*/true);
  if (node && !queue.inOrder) queue.barrier = node;
}

void OpenClModelExecutor::flush(const ModelCall& call) {
  check(api_.flush(queues_.named(call.names[0]).handle), CallPoint::Sync, "clFlush");
}

void OpenClModelExecutor::finish(const ModelCall& call) {
  Queue& queue = queues_.named(call.names[0]);
  completeUserEvents();
  // Overlaps: the queue is this operation's; the check after it keeps the state.
  check(api_.finish(queue.handle), CallPoint::Sync, "clFinish");
  afterWait("clFinish " + call.names[0] + " (operation " + std::to_string(call.ordinal) + ")",
            queue.inFlight);
}

void OpenClModelExecutor::waitForEvents(const ModelCall& call) {
  std::vector<cl_event> list;
  std::vector<CommandPtr> nodes;
  bool foreign = false;
  cl_context first = nullptr;
  for (const std::string& name : call.names) {
    const Event& event = events_.named(name);
    if (event.handle == nullptr) continue;
    if (first == nullptr) first = event.ctx;
    foreign = foreign || event.ctx != first;
    list.push_back(event.handle);
    nodes.push_back(event.node);
  }
  if (list.empty()) return;  // clWaitForEvents of nothing is CL_INVALID_VALUE: nothing to wait
  completeUserEvents(nodes);
  flushQueuesOf(nodes, nullptr);
  // Overlaps: the events are this operation's names (the sequence's references); the check after
  // it keeps the state.
  const cl_int status = api_.waitForEvents(static_cast<cl_uint>(list.size()), list.data());
  if (foreign) {
    if (status == CL_INVALID_CONTEXT) return;
    throw DeviceError(CallPoint::Sync,
                      "clWaitForEvents: " + clErrorName(status) +
                          " for events of different contexts, where the spec requires "
                          "CL_INVALID_CONTEXT");
  }
  check(status, CallPoint::Sync, "clWaitForEvents");
  afterWait(label(call, "clWaitForEvents"), nodes);
}

void OpenClModelExecutor::createUserEvent(const ModelCall& call) {
  Event event;
  event.ctx = contexts_.named(call.names[0]);
  cl_int status = CL_SUCCESS;
  event.handle = api_.createUserEvent(event.ctx, &status);
  check(status, CallPoint::Launch, "clCreateUserEvent");
  // The executor's own reference, so that it can still set the event once the sequence released
  // its own (see completeUserEvents).
  check(api_.retainEvent(event.handle), CallPoint::Launch, "clRetainEvent");
  auto node = std::make_shared<Command>();
  node->api = &api_;
  node->event = event.handle;
  node->what = label(call, "clCreateUserEvent");
  node->user = true;
  node->unset = true;
  event.node = node;
  userEvents_.push_back(node);
  events_.add(call.names[1], std::move(event));
}

void OpenClModelExecutor::setUserEventStatus(const ModelCall& call) {
  const Event& event = events_.named(call.names[0]);
  if (event.handle == nullptr) return;
  // Another thread's completeUserEvents may set this event too: `unset` says which set comes first.
  const seam::KeepState keep;
  const cl_int status = api_.setUserEventStatus(event.handle, CL_COMPLETE);
  // The spec's answers: a marker's event is no user event; a user event is set only once (the
  // executor may have set it before a wait or a release).
  const cl_int expected = !event.node->user   ? CL_INVALID_EVENT
                          : event.node->unset ? CL_SUCCESS
                                              : CL_INVALID_OPERATION;
  if (status != expected) {
    throw DeviceError(CallPoint::Sync,
                      "clSetUserEventStatus " + call.names[0] + ": " + clErrorName(status) +
                          ", where the spec requires " + clErrorName(expected) +
                          (!event.node->user    ? " (the event is a marker's, not a user event)"
                           : !event.node->unset ? " (the user event was already set)"
                                                : ""));
  }
  event.node->unset = false;
}

void OpenClModelExecutor::setEventCallback(const ModelCall& call) {
  const Event& event = events_.named(call.names[0]);
  if (event.handle == nullptr) return;
  auto* record = new EventCallbackRecord;  // the process's: see EventCallbackRecord
  check(api_.setEventCallback(event.handle, CL_COMPLETE, eventCallback, record), CallPoint::Sync,
        "clSetEventCallback " + call.names[0]);
  if (event.node->done) {
    callbacksDue_.emplace_back(record, event.node->what);
  } else {
    event.node->callbacks.push_back(record);
  }
}

void OpenClModelExecutor::releaseEvent(const ModelCall& call) {
  const Event event = events_.take(call.names[0]);
  if (event.handle == nullptr) return;
  check(api_.releaseEvent(event.handle), CallPoint::Sync, "clReleaseEvent " + call.names[0]);
}

}  // namespace gpufuzz::clmodel
