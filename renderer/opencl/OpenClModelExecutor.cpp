// OpenClModelExecutor.cpp: the `opencl` model's operations as OpenCL calls: the table, the order
// kept per memory object, the checks of waits and callbacks, contexts and queues. The other
// handlers are in OpenClMemoryOps.cpp and OpenClEventOps.cpp.
#include "renderer/opencl/OpenClModelExecutor.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "renderer/device/PendingWork.h"
#include "renderer/device/RuntimeSeam.h"
#include "renderer/opencl/OpenClModelExecutorImpl.h"

namespace gpufuzz {

namespace clmodel {

namespace {

/// Past 64 MiB, so that a CPU device's large buffers are read at windows too. On pocl with two
/// cores a kernel, a fill and a copy over 256 MiB take 0.7 s in all; a kernel over 5 GiB took 8 s.
constexpr uint64_t kCpuBufferRoom = uint64_t{256} << 20;

using Clock = std::chrono::steady_clock;

/// Polls `ready` every millisecond for up to `ms`; whether it became true.
bool within(int ms, const std::function<bool()>& ready) {
  const Clock::time_point end = Clock::now() + std::chrono::milliseconds(ms);
  while (!ready()) {
    if (Clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

OpenClModelExecutor::OpenClModelExecutor(const OpenClApi& api, std::string_view deviceText,
                                         int graceMs)
    : api_(api),
      device_(selectOpenClDevice(listOpenClDevices(api), deviceText)),
      graceMs_(graceMs) {
  cl_device_svm_capabilities svm = 0;
  svm_ = api_.svmAlloc != nullptr && api_.svmFree != nullptr && api_.enqueueSVMFree != nullptr &&
         api_.enqueueSVMMemFill != nullptr && api_.enqueueSVMMemcpy != nullptr &&
         api_.getDeviceInfo(device_.device, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm,
                            nullptr) == CL_SUCCESS &&
         (svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0;
  cl_command_queue_properties queues = 0;
  api_.getDeviceInfo(device_.device, CL_DEVICE_QUEUE_PROPERTIES, sizeof queues, &queues, nullptr);
  outOfOrder_ = (queues & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0;
  cl_bool images = CL_FALSE;
  api_.getDeviceInfo(device_.device, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, nullptr);
  images_ = images == CL_TRUE;
  cl_uint alignBits = 8;
  api_.getDeviceInfo(device_.device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof alignBits, &alignBits,
                     nullptr);
  subBufferAlign_ = std::max<size_t>(1, alignBits / 8);
  cl_ulong maxAlloc = 0;
  cl_ulong global = 0;
  if (api_.getDeviceInfo(device_.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof maxAlloc, &maxAlloc,
                         nullptr) == CL_SUCCESS &&
      api_.getDeviceInfo(device_.device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global,
                         nullptr) == CL_SUCCESS) {
    largestBuffer_ = maxAlloc;
    bufferRoom_ = global / 4;
  }
  cl_device_type type = 0;
  api_.getDeviceInfo(device_.device, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
  if ((type & CL_DEVICE_TYPE_CPU) != 0) bufferRoom_ = std::min(bufferRoom_, kCpuBufferRoom);
}

const kit::OpTable<OpenClModelExecutor>& OpenClModelExecutor::table() {
  using E = OpenClModelExecutor;
  // An SVM allocation ends by svm_free or enqueue_svm_free, so its kind has no default release.
  static const kit::OpTable<E> ops{
      kOwner,
      "opencl",
      {
          {"create_context", &E::createContext},
          {"release_context", &E::releaseContext},
          {"create_command_queue", &E::createQueue},
          {"release_command_queue", &E::releaseQueue},
          {"create_buffer", &E::createBuffer},
          {"create_sub_buffer", &E::createSubBuffer},
          {"release_buffer", &E::releaseBuffer},
          {"release_sub_buffer", &E::releaseSubBuffer},
          {"create_image", &E::createImage},
          {"release_image", &E::releaseImage},
          {"svm_alloc", &E::svmAlloc},
          {"svm_free", &E::svmFree},
          {"build_program", &E::buildProgram},
          {"release_program", &E::releaseProgram},
          {"create_kernel", &E::createKernel},
          {"release_kernel", &E::releaseKernel},
          {"enqueue_write_buffer", &E::writeBuffer},
          {"enqueue_fill_buffer", &E::fillBuffer},
          {"enqueue_copy_buffer", &E::copyBuffer},
          {"enqueue_read_buffer", &E::readBuffer},
          {"enqueue_fill_sub_buffer", &E::fillSubBuffer},
          {"enqueue_read_sub_buffer", &E::readSubBuffer},
          {"enqueue_write_image", &E::writeImage},
          {"enqueue_read_image", &E::readImage},
          {"enqueue_ndrange_kernel", &E::ndrange},
          {"enqueue_svm_mem_fill", &E::svmFill},
          {"enqueue_svm_memcpy", &E::svmMemcpy},
          {"enqueue_svm_read", &E::svmRead},
          {"enqueue_svm_free", &E::enqueueSvmFree},
          {"enqueue_marker", &E::marker},
          {"enqueue_barrier", &E::barrier},
          {"flush", &E::flush},
          {"finish", &E::finish},
          {"wait_for_events", &E::waitForEvents},
          {"create_user_event", &E::createUserEvent},
          {"set_user_event_status", &E::setUserEventStatus},
          {"set_event_callback", &E::setEventCallback},
          {"release_event", &E::releaseEvent},
          {"set_mem_object_destructor_callback", &E::setDestructorCallback},
      },
      {{"svm", &E::freeSvm}},
  };
  return ops;
}

void OpenClModelExecutor::run(const ModelCall& call) {
  table().run(*this, call);
}

void OpenClModelExecutor::release(std::string_view kind, const std::string& name) {
  table().release(*this, releases_, kind, name);
}

std::string OpenClModelExecutor::label(const ModelCall& call, const char* clCall) const {
  std::string text = clCall;
  for (const std::string& name : call.names)
    text += " " + name;
  if (call.ordinal == 0) return text + ", at the end";
  return text + ", operation " + std::to_string(call.ordinal);
}

std::vector<std::string> OpenClModelExecutor::listOf(const ModelCall& call, size_t fixed,
                                                     size_t introduced) const {
  return std::vector<std::string>(call.names.begin() + static_cast<std::ptrdiff_t>(fixed),
                                  call.names.end() - static_cast<std::ptrdiff_t>(introduced));
}

// ---- user events, waits and their checks ----------------------------------------------------

/// Sets CL_COMPLETE on every unset user event that enqueued commands wait on, and on `also`.
/// Called before every blocking wait (which would otherwise block forever by design) and before
/// every release of a non-event object: clSetUserEventStatus's description makes such a release
/// undefined while commands wait on an unset user event.
void OpenClModelExecutor::completeUserEvents(const std::vector<CommandPtr>& also) {
  // Other names' user events: another thread's set_user_event_status reads `unset` around its call.
  const seam::KeepState keep;
  std::vector<CommandPtr> set = gating_;
  set.insert(set.end(), also.begin(), also.end());
  gating_.clear();
  for (std::size_t i = 0; i < set.size(); ++i) {
    const CommandPtr& user = set[i];
    if (!user->unset) continue;
    const cl_int status = api_.setUserEventStatus(user->event, CL_COMPLETE);
    if (status != CL_SUCCESS) {
      // A set that failed left this event and the ones after it unset: they still gate.
      gating_.insert(gating_.end(), set.begin() + static_cast<std::ptrdiff_t>(i), set.end());
    }
    check(status, CallPoint::Sync,
          "clSetUserEventStatus (" + user->what + ", set before a wait or release)");
    user->unset = false;
  }
}

CommandPtr OpenClModelExecutor::enqueue(
    const ModelCall& call, const char* clCall, Queue& queue,
    const std::vector<cl_context>& contexts, const std::vector<Memory*>& memories,
    const std::vector<std::string>& waitNames,
    const std::function<cl_int(cl_uint, const cl_event*, cl_event*)>& submit, CallPoint point,
    bool waitsForAll) {
  std::vector<Event*> listed;
  bool foreign = false;
  for (const cl_context ctx : contexts)
    foreign = foreign || ctx != queue.ctx;
  for (const std::string& name : waitNames) {
    Event& event = events_.named(name);
    if (event.handle == nullptr) continue;  // absent: its command was refused
    foreign = foreign || event.ctx != queue.ctx;
    listed.push_back(&event);
  }
  std::vector<cl_event> list;
  for (Event* event : listed)
    list.push_back(event->handle);
  if (foreign) {
    // The spec's answer to objects or events of another context: CL_INVALID_CONTEXT.
    cl_event made = nullptr;
    const cl_int status =
        submit(static_cast<cl_uint>(list.size()), list.empty() ? nullptr : list.data(), &made);
    if (status == CL_INVALID_CONTEXT) return nullptr;
    if (made != nullptr) api_.releaseEvent(made);
    throw DeviceError(point,
                      std::string(clCall) + ": " + clErrorName(status) +
                          " for an object or event of another context than the queue's, where the "
                          "spec requires CL_INVALID_CONTEXT");
  }
  auto node = std::make_shared<Command>();
  node->api = &api_;
  node->what = label(call, clCall);
  if (queue.inOrder && queue.last) node->after.push_back(queue.last);
  if (!queue.inOrder && queue.barrier) node->after.push_back(queue.barrier);
  if (waitsForAll && !queue.inOrder && listed.empty()) {
    node->after.insert(node->after.end(), queue.inFlight.begin(), queue.inFlight.end());
  }
  for (Event* event : listed) {
    node->after.push_back(event->node);
    if (event->node->unset) gating_.push_back(event->node);
  }
  bool shared = false;
  Pins pins;
  for (Memory* memory : memories) {
    shared = shared || memory->names > 1;
    if (!memory->last) continue;
    node->after.push_back(memory->last);
    // A released queue's handle may come back for a new queue: its commands' `queue` is null.
    const bool queueOrders = queue.inOrder && memory->last->queue == queue.handle;
    if (!queueOrders && !memory->last->done) {
      list.push_back(memory->last->event);
      pins.add(memory->last);
    }
  }
  // A command may wait on another queue's command only once that queue is flushed (the spec's
  // rule for events across queues); without it a runtime that submits lazily blocks forever.
  flushQueuesOf(node->after, queue.handle);
  // A release on another thread is inside the runtime: the spec makes it undefined once a command
  // waits on an unset user event, so the gating ones, this command's included, are set first.
  if (releasing_ > 0 && !gating_.empty()) completeUserEvents();
  std::sort(list.begin(), list.end());
  list.erase(std::unique(list.begin(), list.end()), list.end());
  // A buffer and its sub-buffers share `last` and the shadow, which the other names' operations
  // read before their calls and write after them: the call and its bookkeeping are one step.
  const seam::KeepState keep(shared);
  cl_event made = nullptr;
  check(submit(static_cast<cl_uint>(list.size()), list.empty() ? nullptr : list.data(), &made),
        point, clCall);
  node->event = made;
  node->queue = queue.handle;
  queue.inFlight.push_back(node);
  if (queue.inOrder) queue.last = node;
  for (Memory* memory : memories)
    memory->last = node;
  return node;
}

void OpenClModelExecutor::flushQueuesOf(const std::vector<CommandPtr>& commands,
                                        cl_command_queue except) {
  // Other names' queues: releaseQueue clears `queue` before its call, so with no other thread
  // between the read and the flush, no queue flushed here is being released.
  const seam::KeepState keep;
  std::set<cl_command_queue> queues;
  for (const CommandPtr& command : commands) {
    if (command->queue != nullptr && command->queue != except && !command->done) {
      queues.insert(command->queue);
    }
  }
  for (const cl_command_queue queue : queues)
    check(api_.flush(queue), CallPoint::Sync, "clFlush (a queue whose command is waited on)");
}

cl_int OpenClModelExecutor::releasing(const std::function<cl_int()>& release) {
  ++releasing_;
  const cl_int status = release();
  --releasing_;
  return status;
}

/// A pinned command keeps its event until its Pins end.
void OpenClModelExecutor::markDone(Command& command) {
  command.done = true;
  command.after.clear();
  for (EventCallbackRecord* record : command.callbacks)
    callbacksDue_.emplace_back(record, command.what);
  command.callbacks.clear();
  if (command.pins == 0) command.releaseEvent();
}

/// The wait-completion oracle: every command under `roots` (and what each waited for) must be
/// CL_COMPLETE now that wait `wait` returned.
void OpenClModelExecutor::checkWait(const std::string& wait, const std::vector<CommandPtr>& roots) {
  // The graph reaches other names' commands: another thread's wait could mark them done, and
  // release their events, between these clGetEventInfo calls.
  const seam::KeepState keep;
  std::vector<PendingCommand> stale;
  std::set<const Command*> seen;
  // Owned while walked: marking one command done drops what it waited for, which may be the
  // last owner of another command of the walk.
  std::vector<CommandPtr> walked;
  std::vector<CommandPtr> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    CommandPtr command = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(command.get()).second || command->done) continue;
    for (const CommandPtr& before : command->after)
      stack.push_back(before);
    const EventAfterWait after = eventAfterWait(api_, command->event);
    if (!after.stale.empty()) stale.push_back(PendingCommand{command->what, after.stale});
    walked.push_back(std::move(command));
  }
  // Done only once everything was asked: a command complete before what it waited for is stale.
  if (stale.empty()) {
    for (const CommandPtr& command : walked)
      if (!command->done) markDone(*command);
  }
  for (auto& [name, queue] : queues_) {
    std::erase_if(queue.inFlight, [](const CommandPtr& c) { return c->done; });
  }
  std::erase_if(orphans_, [](const CommandPtr& c) { return c->done; });
  if (!stale.empty()) {
    throw DeviceError(CallPoint::Sync, wait + " returned while " + describePendingCommands(stale));
  }
}

/// Callbacks the spec promises by now that have not run within kCallbackGraceMs, described.
std::string OpenClModelExecutor::checkCallbacks() {
  for (const auto& [record, what] : callbacksDue_) {
    if (!within(graceMs_, [record = record] { return record->calls.load() > 0; })) {
      return "the CL_COMPLETE callback of " + what + " did not run within " +
             std::to_string(graceMs_) + " ms of a wait seeing it complete";
    }
    if (record->status != CL_COMPLETE) {
      return "the CL_COMPLETE callback of " + what + " ran with status " +
             clExecutionStatusName(record->status);
    }
  }
  callbacksDue_.clear();
  std::vector<MemObjectPtr> waiting;
  for (const MemObjectPtr& object : dying_) {
    const bool due = object->liveSubBuffers == 0 && object->kernelHolds == 0 &&
                     (!object->memory->last || object->memory->last->done);
    if (!due) {
      waiting.push_back(object);
      continue;
    }
    DestructorRecord* record = object->destructors;
    const size_t expected = static_cast<size_t>(object->callbacks);
    if (!within(graceMs_, [&] {
          const std::lock_guard lock(record->mutex);
          return record->order.size() >= expected;
        })) {
      return "memory object " + object->name + " was not deleted (its destructor callbacks did " +
             "not run) within " + std::to_string(graceMs_) +
             " ms of its release, its sub-buffers' and the completion of its commands";
    }
    std::vector<int> order;
    {
      const std::lock_guard lock(record->mutex);
      order = record->order;
    }
    std::vector<int> reverse(expected);
    for (size_t i = 0; i < expected; ++i)
      reverse[i] = static_cast<int>(expected - 1 - i);
    if (order != reverse) {
      std::string text;
      for (const int i : order)
        text += (text.empty() ? "" : ", ") + std::to_string(i);
      return "the destructor callbacks of " + object->name + " ran in the order " + text +
             " (0 registered first); the spec requires the reverse of registration";
    }
  }
  dying_ = std::move(waiting);
  return {};
}

void OpenClModelExecutor::afterWait(const std::string& wait, const std::vector<CommandPtr>& roots) {
  checkWait(wait, roots);
  const std::string missed = checkCallbacks();
  if (!missed.empty()) throw DeviceError(CallPoint::Sync, wait + ": " + missed);
}

// ---- contexts and queues -----------------------------------------------------------------------

void OpenClModelExecutor::createContext(const ModelCall& call) {
  const cl_context_properties properties[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(device_.platform), 0};
  cl_int status = CL_SUCCESS;
  cl_context ctx = api_.createContext(properties, 1, &device_.device, nullptr, nullptr, &status);
  check(status, CallPoint::CtxCreate, "clCreateContext");
  contexts_.add(call.names[0], ctx);
}

void OpenClModelExecutor::releaseContext(const ModelCall& call) {
  completeUserEvents();
  const cl_context ctx = contexts_.take(call.names[0]);
  check(releasing([&] { return api_.releaseContext(ctx); }), CallPoint::CtxDestroy,
        "clReleaseContext");
}

void OpenClModelExecutor::createQueue(const ModelCall& call) {
  const cl_context ctx = contexts_.named(call.names[0]);
  // A device without out-of-order queues gets an in-order one: the order is then the queue's.
  const bool outOfOrder = call.word("order") == "out" && outOfOrder_;
  cl_int status = CL_SUCCESS;
  Queue queue;
  queue.handle = api_.createCommandQueue(
      ctx, device_.device, outOfOrder ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0, &status);
  check(status, CallPoint::CtxCreate, "clCreateCommandQueue");
  queue.ctx = ctx;
  queue.inOrder = !outOfOrder;
  queues_.add(call.names[1], std::move(queue));
}

void OpenClModelExecutor::releaseQueue(const ModelCall& call) {
  completeUserEvents();
  Queue queue = queues_.take(call.names[0]);
  // Cleared before the call, so that no other thread's flushQueuesOf hands the runtime this queue
  // while it is released: the release flushes it.
  for (const CommandPtr& command : queue.inFlight)
    command->queue = nullptr;
  orphans_.insert(orphans_.end(), queue.inFlight.begin(), queue.inFlight.end());
  const cl_int status = releasing([&] { return api_.releaseCommandQueue(queue.handle); });
  // A release that failed did not flush: other threads' commands may wait on these.
  if (status != CL_SUCCESS) api_.flush(queue.handle);
  check(status, CallPoint::CtxDestroy, "clReleaseCommandQueue");
}

// ---- the end -----------------------------------------------------------------------------------

std::string OpenClModelExecutor::leaked() {
  try {
    completeUserEvents(userEvents_);
  } catch (const DeviceError& e) {
    return e.what();
  }
  userEvents_.clear();
  // Everything is released: the commands left run out (released queues were flushed).
  std::vector<CommandPtr> left = orphans_;
  for (auto& [name, queue] : queues_)
    left.insert(left.end(), queue.inFlight.begin(), queue.inFlight.end());
  std::string stuck;
  for (const CommandPtr& command : left) {
    if (command->done) continue;
    const bool ran = within(graceMs_, [&] { return eventAfterWait(api_, command->event).done; });
    if (!ran) {
      stuck = command->what + " did not complete within " + std::to_string(graceMs_) +
              " ms of everything's release";
      break;
    }
    markDone(*command);
  }
  orphans_.clear();
  std::string missed = stuck.empty() ? checkCallbacks() : stuck;
  for (const cl_context ctx : heldContexts_)
    api_.releaseContext(ctx);
  heldContexts_.clear();
  gating_.clear();
  dying_.clear();
  callbacksDue_.clear();
  return missed;
}

}  // namespace clmodel

kit::TableShape openClExecutorTable() {
  return clmodel::OpenClModelExecutor::table().shape();
}

std::unique_ptr<ModelExecutor> makeOpenClModelExecutor(std::string_view deviceText) {
  return std::make_unique<clmodel::OpenClModelExecutor>(openClApi(), deviceText, kCallbackGraceMs);
}

std::unique_ptr<ModelExecutor> makeOpenClModelExecutor(const OpenClApi& api,
                                                       std::string_view deviceText,
                                                       int callbackGraceMs) {
  return std::make_unique<clmodel::OpenClModelExecutor>(api, deviceText, callbackGraceMs);
}

}  // namespace gpufuzz
