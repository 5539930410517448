// OpenClModelExecutor.cpp: the `opencl` model's operations as OpenCL calls, with the host shadow,
// the order kept per memory object, and the checks of waits and callbacks.
#include "renderer/opencl/OpenClModelExecutor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "renderer/device/DeviceError.h"
#include "renderer/device/PendingWork.h"
#include "renderer/device/RuntimeSeam.h"
#include "renderer/opencl/MemoryShadow.h"
#include "renderer/opencl/OpenClApi.h"
#include "renderer/opencl/OpenClDeviceMemory.h"
#include "renderer/opencl/OpenClDevices.h"
#include "renderer/opencl/RasterProgram.h"

namespace gpufuzz {

namespace {

/// Past 64 MiB, so that a CPU device's large buffers are read at windows too. On pocl with two
/// cores a kernel, a fill and a copy over 256 MiB take 0.7 s in all; a kernel over 5 GiB took 8 s.
constexpr uint64_t kCpuBufferRoom = uint64_t{256} << 20;

/// The kernel of enqueue_ndrange_kernel: word i of the buffer becomes patternWord(i, seed).
constexpr const char kPatternSource[] = R"CL(
__kernel void gpufuzzPattern(__global uint* words, uint seed) {
  const size_t i = get_global_id(0);
  words[i] = ((uint)i * 2654435761u) ^ seed;
}
)CL";
constexpr const char* kPatternKernel = "gpufuzzPattern";

/// The bytes `what` puts at each window, one after another: what a write stages.
std::vector<std::byte> generatedBytes(const Generated& what, const std::vector<Window>& windows) {
  size_t total = 0;
  for (const Window& window : windows)
    total += window.bytes;
  std::vector<std::byte> bytes(total);
  size_t j = 0;
  for (const Window& window : windows) {
    for (uint64_t place = window.offset; place < window.offset + window.bytes; ++place)
      bytes[j++] = what.at(place);
  }
  return bytes;
}

void check(cl_int status, CallPoint point, const std::string& call) {
  if (status != CL_SUCCESS) throw DeviceError(point, call + ": " + clErrorName(status));
}

/// A callback's record. The runtime may call a callback at any time, even after the executor is
/// gone (a run ends at its first failure), so records are left to the process's exit.
struct EventCallbackRecord {
  std::atomic<int> calls{0};
  std::atomic<cl_int> status{1};
};

void CL_CALLBACK eventCallback(cl_event, cl_int status, void* data) {
  auto* record = static_cast<EventCallbackRecord*>(data);
  record->status = status;
  ++record->calls;
}

/// The destructor callbacks of one memory object: each appends its index (0 is the executor's own,
/// registered first so it runs last).
struct DestructorRecord {
  std::mutex mutex;
  std::vector<int> order;
};

struct DestructorCall {
  DestructorRecord* record;
  int index;
};

void CL_CALLBACK destructorCallback(cl_mem, void* data) {
  auto* call = static_cast<DestructorCall*>(data);
  const std::lock_guard lock(call->record->mutex);
  call->record->order.push_back(call->index);
}

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

/// One enqueued command or user event: a node of what must be complete when it is.
struct Command {
  const OpenClApi* api = nullptr;
  /// The executor's own reference; released once a wait saw the command done.
  cl_event event = nullptr;
  /// "clEnqueueWriteBuffer b0, operation 3"
  std::string what;
  /// What must be complete when this is: the queue's previous command or barrier, the wait
  /// list, the memory's previous command.
  std::vector<std::shared_ptr<Command>> after;
  /// The queue it was enqueued on while that queue is alive and may hold it unflushed; null for
  /// user events and once the queue is released (a release flushes).
  cl_command_queue queue = nullptr;
  bool done = false;
  bool user = false;
  bool unset = false;  // a user event not yet set
  std::vector<EventCallbackRecord*> callbacks;
  /// A non-blocking write's source, alive until the write is seen done.
  std::vector<std::byte> staged;
  /// Runtime calls of other operations that use `event` now, with the state lock let go: a
  /// command seen done keeps its event until the last of them returns (Pins).
  int pins = 0;

  Command() = default;
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;
  ~Command() {
    if (event != nullptr) api->releaseEvent(event);
    // A command never seen done may still read its source: that is left to the process's exit.
    if (!done && !staged.empty()) new std::vector<std::byte>(std::move(staged));
  }
  /// Releases the executor's reference. The field is cleared first, since the release lets go of
  /// the state lock and another thread may then read it.
  void releaseEvent() {
    const cl_event own = std::exchange(event, nullptr);
    if (own != nullptr) api->releaseEvent(own);
  }
};
using CommandPtr = std::shared_ptr<Command>;

/// Commands whose events one runtime call is handed while the state lock is let go: a wait on
/// another thread may see them done meanwhile, and their events are released only once the call
/// returned.
class Pins {
 public:
  Pins() = default;
  Pins(const Pins&) = delete;
  Pins& operator=(const Pins&) = delete;
  ~Pins() {
    for (const CommandPtr& command : commands_) {
      if (--command->pins == 0 && command->done) command->releaseEvent();
    }
  }
  void add(const CommandPtr& command) {
    ++command->pins;
    commands_.push_back(command);
  }

 private:
  std::vector<CommandPtr> commands_;
};

/// The storage of a buffer (shared by its sub-buffers), an image or an SVM allocation.
struct Memory {
  MemoryShadow shadow;
  CommandPtr last;  // the last command that used it
  /// Live memory objects on it: a buffer and its sub-buffers share it, and operations on their
  /// different names may then run at once.
  int names = 1;

  explicit Memory(size_t bytes) : shadow(bytes) {}
};
using MemoryPtr = std::shared_ptr<Memory>;

struct MemObject {
  std::string name;
  cl_mem mem = nullptr;  // null: an image on a device without images
  cl_context ctx = nullptr;
  MemoryPtr memory;
  size_t offset = 0;
  size_t bytes = 0;
  size_t width = 0, height = 0;  // images
  DestructorRecord* destructors = nullptr;
  int callbacks = 1;  // destructor callbacks registered, the executor's own included
  bool released = false;
  std::shared_ptr<MemObject> parent;  // a sub-buffer's buffer
  int liveSubBuffers = 0;
  int kernelHolds = 0;   // live kernels whose argument it is
  bool counted = false;  // a buffer counted in liveBufferBytes_
};
using MemObjectPtr = std::shared_ptr<MemObject>;

struct Queue {
  cl_command_queue handle = nullptr;
  cl_context ctx = nullptr;
  bool inOrder = true;
  CommandPtr last;     // in order: the previous command
  CommandPtr barrier;  // out of order: the last barrier
  std::vector<CommandPtr> inFlight;
};

struct Event {
  cl_event handle = nullptr;  // the sequence's reference; null: absent (its command was refused)
  CommandPtr node;
  cl_context ctx = nullptr;
};

struct Svm {
  void* ptr = nullptr;  // null: a device without SVM
  cl_context ctx = nullptr;
  MemoryPtr memory;
};

struct Program {
  cl_program handle = nullptr;
  cl_context ctx = nullptr;
};

struct Kernel {
  cl_kernel handle = nullptr;
  cl_context ctx = nullptr;
  MemObjectPtr arg;
};

template <typename T>
T& named(std::map<std::string, T>& map, const std::string& name) {
  auto it = map.find(name);
  if (it == map.end()) throw std::logic_error("opencl executor: no live object named " + name);
  return it->second;
}

template <typename T>
T take(std::map<std::string, T>& map, const std::string& name) {
  T value = std::move(named(map, name));
  map.erase(name);
  return value;
}

class OpenClModelExecutor final : public ModelExecutor {
 public:
  OpenClModelExecutor(const OpenClApi& api, std::string_view deviceText, int graceMs)
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

  ~OpenClModelExecutor() override = default;  // objects left are the process's exit's
  bool leaveDeviceMemory(uint64_t bytes) override {
    return leaveOpenClMemory(api_, device_, bytes, held_);
  }

  std::string description() const override {
    std::string features;
    features += outOfOrder_ ? "out-of-order queues" : "in-order queues only";
    features += images_ ? ", images" : ", no images";
    features += svm_ ? ", coarse-grain SVM" : ", no SVM";
    return device_.identity() + " (" + features + ")";
  }

  void run(const ModelCall& call) override;
  void release(std::string_view kind, const std::string& name) override;
  std::string leaked() override;

 private:
  using Op = void (OpenClModelExecutor::*)(const ModelCall&);
  static const std::map<std::string_view, Op>& operations();

  std::string label(const ModelCall& call, const char* clCall) const;
  std::vector<std::string> listOf(const ModelCall& call, size_t fixed, size_t introduced) const;
  void completeUserEvents(const std::vector<CommandPtr>& also = {});
  CommandPtr enqueue(const ModelCall& call, const char* clCall, Queue& queue,
                     const std::vector<cl_context>& contexts, const std::vector<Memory*>& memories,
                     const std::vector<std::string>& waitNames,
                     const std::function<cl_int(cl_uint, const cl_event*, cl_event*)>& submit,
                     CallPoint point, bool waitsForAll = false);
  void checkWait(const std::string& wait, const std::vector<CommandPtr>& roots);
  std::string checkCallbacks();
  void afterWait(const std::string& wait, const std::vector<CommandPtr>& roots);
  /// Checks `read`, the bytes of `windows` of an object at `offset` in `memory`, one window
  /// after another, against the shadow.
  void compare(const Memory& memory, size_t offset, const std::vector<Window>& windows,
               const std::vector<std::byte>& read, const std::string& what) const;
  /// Takes `name` out of `objects` and releases it.
  void releaseMemObject(std::map<std::string, MemObjectPtr>& objects, const std::string& name);
  void registerDestructor(MemObject& object, int index);
  /// The executor's own destructor callback on a new object; when that fails the object is
  /// released and the failure thrown.
  void registerOwnDestructor(MemObject& object);
  void readBack(const ModelCall& call, Queue& queue, const MemObject& object, const char* what);
  /// One transfer per window, each after the one before, the first after `list`; the last
  /// makes `made`. `at` is the window's place in the host's bytes. When a later call fails,
  /// the earlier ones may still use `host`, which is then left to the process's exit.
  using WindowCall =
      std::function<cl_int(const Window&, size_t at, cl_uint, const cl_event*, cl_event*)>;
  cl_int eachWindow(const std::vector<Window>& windows, cl_uint n, const cl_event* list,
                    cl_event* made, std::unique_ptr<std::vector<std::byte>>& host,
                    const WindowCall& one);

  /// The size create_buffer makes for `asked` bytes, counted in liveBufferBytes_ (see
  /// largestBuffer_); at least 4 bytes, the model's least.
  uint64_t bufferSizeFor(uint64_t asked);

  void createContext(const ModelCall& call);
  void releaseContext(const ModelCall& call);
  void createQueue(const ModelCall& call);
  void releaseQueue(const ModelCall& call);
  void createBuffer(const ModelCall& call);
  void createSubBuffer(const ModelCall& call);
  void releaseBuffer(const ModelCall& call);
  void releaseSubBuffer(const ModelCall& call);
  void createImage(const ModelCall& call);
  void releaseImage(const ModelCall& call);
  void svmAlloc(const ModelCall& call);
  void svmFree(const ModelCall& call);
  void buildProgram(const ModelCall& call);
  void releaseProgram(const ModelCall& call);
  void createKernel(const ModelCall& call);
  void releaseKernel(const ModelCall& call);
  void writeBuffer(const ModelCall& call);
  void fillBuffer(const ModelCall& call);
  void copyBuffer(const ModelCall& call);
  void readBuffer(const ModelCall& call);
  void fillSubBuffer(const ModelCall& call);
  void readSubBuffer(const ModelCall& call);
  void writeImage(const ModelCall& call);
  void readImage(const ModelCall& call);
  void ndrange(const ModelCall& call);
  void svmFill(const ModelCall& call);
  void svmMemcpy(const ModelCall& call);
  void svmRead(const ModelCall& call);
  void enqueueSvmFree(const ModelCall& call);
  void marker(const ModelCall& call);
  void barrier(const ModelCall& call);
  void flush(const ModelCall& call);
  void finish(const ModelCall& call);
  void waitForEvents(const ModelCall& call);
  void createUserEvent(const ModelCall& call);
  void setUserEventStatus(const ModelCall& call);
  void setEventCallback(const ModelCall& call);
  void releaseEvent(const ModelCall& call);
  void setDestructorCallback(const ModelCall& call);

  void fillFrom(const ModelCall& call, const MemObject& object);
  void completeListed(const ModelCall& call, size_t fixed);
  void blockingReadReturned(const CommandPtr& node, const Queue& queue,
                            std::unique_ptr<std::vector<std::byte>>& held);
  void freeSvmNow(Svm& svm, const std::string& name);
  /// `release`, a runtime call that releases an object other than an event, counted in
  /// releasing_ while it runs.
  cl_int releasing(const std::function<cl_int()>& release);
  void markDone(Command& command);
  /// Flushes the live queues of `commands` other than `except`.
  void flushQueuesOf(const std::vector<CommandPtr>& commands, cl_command_queue except);

  OpenClApi api_;
  OpenClDevice device_;
  /// What --device-memory took, held until the process ends.
  HeldClMemory held_;
  int graceMs_;
  bool svm_ = false;
  bool outOfOrder_ = false;
  bool images_ = false;
  size_t subBufferAlign_ = 1;
  /// CL_DEVICE_MAX_MEM_ALLOC_SIZE, and a quarter of CL_DEVICE_GLOBAL_MEM_SIZE: what one run's live
  /// buffers may hold, so that two jobs on one device have room. A CPU device's buffers are the
  /// host's memory, filled by its cores at a few GB/s: there kCpuBufferRoom keeps each operation
  /// well inside the 2 s deadline floor. 64 MiB each where the device does not say.
  uint64_t largestBuffer_ = uint64_t{64} << 20;
  uint64_t bufferRoom_ = uint64_t{64} << 20;
  /// Bytes of the buffers made and not yet released.
  uint64_t liveBufferBytes_ = 0;

  std::map<std::string, cl_context> contexts_;
  std::map<std::string, Queue> queues_;
  std::map<std::string, MemObjectPtr> buffers_, subBuffers_, imageObjects_;
  std::map<std::string, Svm> svms_;
  std::map<std::string, Program> programs_;
  std::map<std::string, Kernel> kernels_;
  std::map<std::string, Event> events_;

  /// Unset user events that enqueued commands wait on, and every user event not yet set.
  std::vector<CommandPtr> gating_, userEvents_;
  /// Commands of released queues, until a wait sees them done.
  std::vector<CommandPtr> orphans_;
  /// Released memory objects whose destructor callbacks are not yet checked.
  std::vector<MemObjectPtr> dying_;
  /// Event callbacks whose event a wait saw done: they must run.
  std::vector<std::pair<EventCallbackRecord*, std::string>> callbacksDue_;
  /// Contexts the executor retained for SVM allocations, released at leaked().
  std::vector<cl_context> heldContexts_;
  /// Releases of objects other than events now inside the runtime, on any thread (see enqueue).
  int releasing_ = 0;
};

const std::map<std::string_view, OpenClModelExecutor::Op>& OpenClModelExecutor::operations() {
  using E = OpenClModelExecutor;
  static const std::map<std::string_view, Op> ops = {
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
  };
  return ops;
}

void OpenClModelExecutor::run(const ModelCall& call) {
  auto it = operations().find(call.op);
  if (it == operations().end()) {
    throw std::logic_error("opencl executor: model operation " + std::string(call.op) +
                           " has no implementation");
  }
  (this->*(it->second))(call);
}

void OpenClModelExecutor::release(std::string_view kind, const std::string& name) {
  static const std::map<std::string_view, std::string_view> ending = {
      {"context", "release_context"}, {"queue", "release_command_queue"},
      {"buffer", "release_buffer"},   {"subbuffer", "release_sub_buffer"},
      {"image", "release_image"},     {"svm", "svm_free"},
      {"program", "release_program"}, {"kernel", "release_kernel"},
      {"event", "release_event"},
  };
  const std::string names[] = {name};
  run(ModelCall{ending.at(kind), names, {}, 0});
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
    Event& event = named(events_, name);
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

void OpenClModelExecutor::compare(const Memory& memory, size_t offset,
                                  const std::vector<Window>& windows,
                                  const std::vector<std::byte>& read,
                                  const std::string& what) const {
  size_t from = 0;
  for (const Window& window : windows) {
    const std::span<const std::byte> part(read.data() + from, window.bytes);
    from += window.bytes;
    const auto difference = memory.shadow.firstDifference(offset + window.offset, part);
    if (!difference) continue;
    const uint64_t j = difference->place - offset;
    char text[160];
    std::snprintf(text, sizeof text, " byte %llu is 0x%02x, the operations wrote 0x%02x",
                  static_cast<unsigned long long>(j),
                  static_cast<unsigned>(part[difference->place - offset - window.offset]),
                  static_cast<unsigned>(difference->expected));
    throw DataMismatch(what + text);
  }
}

// ---- contexts and queues -----------------------------------------------------------------------

void OpenClModelExecutor::createContext(const ModelCall& call) {
  const cl_context_properties properties[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(device_.platform), 0};
  cl_int status = CL_SUCCESS;
  cl_context ctx = api_.createContext(properties, 1, &device_.device, nullptr, nullptr, &status);
  check(status, CallPoint::CtxCreate, "clCreateContext");
  contexts_.emplace(call.names[0], ctx);
}

void OpenClModelExecutor::releaseContext(const ModelCall& call) {
  completeUserEvents();
  const cl_context ctx = take(contexts_, call.names[0]);
  check(releasing([&] { return api_.releaseContext(ctx); }), CallPoint::CtxDestroy,
        "clReleaseContext");
}

void OpenClModelExecutor::createQueue(const ModelCall& call) {
  const cl_context ctx = named(contexts_, call.names[0]);
  // A device without out-of-order queues gets an in-order one: the order is then the queue's.
  const bool outOfOrder = call.word("order") == "out" && outOfOrder_;
  cl_int status = CL_SUCCESS;
  Queue queue;
  queue.handle = api_.createCommandQueue(
      ctx, device_.device, outOfOrder ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0, &status);
  check(status, CallPoint::CtxCreate, "clCreateCommandQueue");
  queue.ctx = ctx;
  queue.inOrder = !outOfOrder;
  queues_.emplace(call.names[1], std::move(queue));
}

void OpenClModelExecutor::releaseQueue(const ModelCall& call) {
  completeUserEvents();
  Queue queue = take(queues_, call.names[0]);
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

// ---- memory objects ----------------------------------------------------------------------------

void OpenClModelExecutor::registerOwnDestructor(MemObject& object) {
  object.destructors = new DestructorRecord;
  try {
    registerDestructor(object, 0);
  } catch (const DeviceError&) {
    // The operation failed: the object was never made, so nothing else releases it.
    api_.releaseMemObject(object.mem);
    throw;
  }
}

void OpenClModelExecutor::registerDestructor(MemObject& object, int index) {
  auto* call = new DestructorCall{object.destructors, index};  // the process's, as records are
  check(api_.setMemObjectDestructorCallback(object.mem, destructorCallback, call),
        CallPoint::BufAlloc, "clSetMemObjectDestructorCallback " + object.name);
}

void OpenClModelExecutor::createBuffer(const ModelCall& call) {
  auto object = std::make_shared<MemObject>();
  object->name = call.names[1];
  object->ctx = named(contexts_, call.names[0]);
  object->bytes = bufferSizeFor(call.arg("bytes"));
  try {
    cl_int status = CL_SUCCESS;
    object->mem =
        api_.createBuffer(object->ctx, CL_MEM_READ_WRITE, object->bytes, nullptr, &status);
    check(status, CallPoint::BufAlloc, "clCreateBuffer");
    object->memory = std::make_shared<Memory>(object->bytes);
    registerOwnDestructor(*object);
  } catch (const DeviceError&) {
    liveBufferBytes_ -= object->bytes;
    throw;
  }
  object->counted = true;
  buffers_.emplace(object->name, object);
}

void OpenClModelExecutor::createSubBuffer(const ModelCall& call) {
  MemObjectPtr parent = named(buffers_, call.names[0]);
  auto object = std::make_shared<MemObject>();
  object->name = call.names[1];
  object->ctx = parent->ctx;
  object->memory = parent->memory;
  // The region is kept valid: its origin aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN and inside
  // the parent, its size clamped to what is left (an invalid region is only CL_INVALID_VALUE).
  const size_t lastAligned = (parent->bytes - 1) / subBufferAlign_ * subBufferAlign_;
  object->offset = std::min<size_t>(call.arg("offset") * subBufferAlign_, lastAligned);
  object->bytes = std::min<size_t>(call.arg("bytes"), parent->bytes - object->offset);
  const cl_buffer_region region{object->offset, object->bytes};
  cl_int status = CL_SUCCESS;
  object->mem = api_.createSubBuffer(parent->mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION,
                                     &region, &status);
  check(status, CallPoint::BufAlloc, "clCreateSubBuffer");
  registerOwnDestructor(*object);
  object->parent = parent;
  ++parent->liveSubBuffers;
  ++object->memory->names;
  subBuffers_.emplace(object->name, object);
}

// User events are set before the object is taken: a set that fails leaves it held, for the
// release that follows the failure.
void OpenClModelExecutor::releaseMemObject(std::map<std::string, MemObjectPtr>& objects,
                                           const std::string& name) {
  completeUserEvents();
  const MemObjectPtr object = take(objects, name);
  object->released = true;
  --object->memory->names;
  if (object->mem == nullptr) {
    if (object->parent) --object->parent->liveSubBuffers;
    return;
  }
  check(releasing([&] { return api_.releaseMemObject(object->mem); }), CallPoint::BufFree,
        "clReleaseMemObject " + name);
  // Only once the release returned: another thread's checkCallbacks then expects the destructor
  // callbacks of the object, or of its parent.
  if (object->parent) --object->parent->liveSubBuffers;
  if (object->counted) liveBufferBytes_ -= object->bytes;
  dying_.push_back(object);
}

uint64_t OpenClModelExecutor::bufferSizeFor(uint64_t asked) {
  const uint64_t room = bufferRoom_ > liveBufferBytes_ ? bufferRoom_ - liveBufferBytes_ : 0;
  const uint64_t size = std::max<uint64_t>(4, std::min({asked, largestBuffer_, room}));
  liveBufferBytes_ += size;
  return size;
}

void OpenClModelExecutor::releaseBuffer(const ModelCall& call) {
  releaseMemObject(buffers_, call.names[0]);
}

void OpenClModelExecutor::releaseSubBuffer(const ModelCall& call) {
  releaseMemObject(subBuffers_, call.names[0]);
}

void OpenClModelExecutor::createImage(const ModelCall& call) {
  auto object = std::make_shared<MemObject>();
  object->name = call.names[1];
  object->ctx = named(contexts_, call.names[0]);
  object->width = call.arg("width");
  object->height = call.arg("height");
  object->bytes = object->width * object->height * 4;
  object->memory = std::make_shared<Memory>(object->bytes);
  if (!images_) {
    imageObjects_.emplace(object->name, object);
    return;  // a device without images: image operations do nothing
  }
  const cl_image_format format{CL_RGBA, CL_UNORM_INT8};
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = object->width;
  desc.image_height = object->height;
  cl_int status = CL_SUCCESS;
  object->mem = api_.createImage(object->ctx, CL_MEM_READ_WRITE, &format, &desc, nullptr, &status);
  check(status, CallPoint::BufAlloc, "clCreateImage");
  registerOwnDestructor(*object);
  imageObjects_.emplace(object->name, object);
}

void OpenClModelExecutor::releaseImage(const ModelCall& call) {
  releaseMemObject(imageObjects_, call.names[0]);
}

void OpenClModelExecutor::setDestructorCallback(const ModelCall& call) {
  MemObject& object = *named(buffers_, call.names[0]);
  registerDestructor(object, object.callbacks);
  ++object.callbacks;
}

// ---- SVM ---------------------------------------------------------------------------------------

void OpenClModelExecutor::svmAlloc(const ModelCall& call) {
  Svm svm;
  svm.ctx = named(contexts_, call.names[0]);
  svm.memory = std::make_shared<Memory>(call.arg("bytes"));
  if (svm_) {
    svm.ptr = api_.svmAlloc(svm.ctx, CL_MEM_READ_WRITE, call.arg("bytes"), 0);
    if (svm.ptr == nullptr) {
      throw DeviceError(CallPoint::BufAlloc,
                        "clSVMAlloc: NULL for " + std::to_string(call.arg("bytes")) + " bytes");
    }
    // OpenCL does not say an SVM allocation keeps its context; clSVMFree needs it alive.
    check(api_.retainContext(svm.ctx), CallPoint::BufAlloc, "clRetainContext");
    heldContexts_.push_back(svm.ctx);
  }
  svms_.emplace(call.names[1], std::move(svm));
}

/// clSVMFree does not wait for commands that use the allocation (undefined if any run): the
/// executor waits for them first.
void OpenClModelExecutor::freeSvmNow(Svm& svm, const std::string& name) {
  if (svm.ptr == nullptr) return;
  completeUserEvents();
  if (svm.memory->last && !svm.memory->last->done) {
    const CommandPtr last = svm.memory->last;
    Pins pins;  // another thread's wait may see the command done while this one waits
    pins.add(last);
    cl_event event = last->event;
    check(api_.waitForEvents(1, &event), CallPoint::BufFree, "clWaitForEvents (before clSVMFree)");
    afterWait("clWaitForEvents (before clSVMFree " + name + ")", {last});
  }
  api_.svmFree(svm.ctx, svm.ptr);
  svm.ptr = nullptr;
}

// The allocation leaves the executor's names only once freed: a wait before the free that fails
// leaves it held, for the release that follows the failure.
void OpenClModelExecutor::svmFree(const ModelCall& call) {
  freeSvmNow(named(svms_, call.names[0]), call.names[0]);
  svms_.erase(call.names[0]);
}

void OpenClModelExecutor::enqueueSvmFree(const ModelCall& call) {
  Queue& queue = named(queues_, call.names[0]);
  Svm& svm = named(svms_, call.names[1]);
  // A pointer of another context: no error is specified, so it is freed as svm_free frees.
  if (svm.ptr != nullptr && svm.ctx != queue.ctx) freeSvmNow(svm, call.names[1]);
  if (svm.ptr != nullptr) {
    void* pointers[] = {svm.ptr};
    enqueue(
        call, "clEnqueueSVMFree", queue, {}, {svm.memory.get()}, {},
        [&](cl_uint n, const cl_event* list, cl_event* made) {
          return api_.enqueueSVMFree(queue.handle, 1, pointers, nullptr, nullptr, n, list, made);
        },
        CallPoint::BufFree);
  }
  svms_.erase(call.names[1]);
}

void OpenClModelExecutor::svmFill(const ModelCall& call) {
  Queue& queue = named(queues_, call.names[0]);
  Svm& svm = named(svms_, call.names[1]);
  if (svm.ptr == nullptr || svm.ctx != queue.ctx) return;  // no SVM, or no specified error
  const auto pattern = static_cast<uint32_t>(call.arg("pattern"));
  const size_t size = svm.memory->shadow.size() / 4 * 4;
  const CommandPtr node = enqueue(
      call, "clEnqueueSVMMemFill", queue, {}, {svm.memory.get()}, listOf(call, 2, 0),
      [&](cl_uint n, const cl_event* list, cl_event* made) {
        return api_.enqueueSVMMemFill(queue.handle, svm.ptr, &pattern, 4, size, n, list, made);
      },
      CallPoint::CopyToDevice);
  if (node) svm.memory->shadow.assign(0, size, Generated{Generated::Kind::Pattern, pattern, 0});
}

void OpenClModelExecutor::svmMemcpy(const ModelCall& call) {
  Queue& queue = named(queues_, call.names[0]);
  Svm& dst = named(svms_, call.names[1]);
  Svm& src = named(svms_, call.names[2]);
  if (dst.ptr == nullptr || src.ptr == nullptr || dst.ctx != queue.ctx || src.ctx != queue.ctx) {
    return;
  }
  const size_t size = std::min(dst.memory->shadow.size(), src.memory->shadow.size());
  const CommandPtr node = enqueue(
      call, "clEnqueueSVMMemcpy", queue, {}, {dst.memory.get(), src.memory.get()},
      listOf(call, 3, 0),
      [&](cl_uint n, const cl_event* list, cl_event* made) {
        return api_.enqueueSVMMemcpy(queue.handle, CL_FALSE, dst.ptr, src.ptr, size, n, list, made);
      },
      CallPoint::CopyToDevice);
  if (!node) return;
  dst.memory->shadow.copyFrom(src.memory->shadow, 0, 0, size);
}

void OpenClModelExecutor::svmRead(const ModelCall& call) {
  Queue& queue = named(queues_, call.names[0]);
  Svm& svm = named(svms_, call.names[1]);
  if (svm.ptr == nullptr || svm.ctx != queue.ctx) return;
  auto held = std::make_unique<std::vector<std::byte>>(svm.memory->shadow.size());
  std::vector<std::byte>& read = *held;
  const CommandPtr node = enqueue(
      call, "clEnqueueSVMMemcpy", queue, {}, {svm.memory.get()}, listOf(call, 2, 0),
      [&](cl_uint n, const cl_event* list, cl_event* made) {
        completeListed(call, 2);
        return api_.enqueueSVMMemcpy(queue.handle, CL_TRUE, read.data(), svm.ptr, read.size(), n,
                                     list, made);
      },
      CallPoint::CopyToHost);
  if (!node) return;
  blockingReadReturned(node, queue, held);
  compare(*svm.memory, 0, {Window{0, read.size()}}, read,
          "svm " + call.names[1] + " (" + node->what + ")");
}

// ---- programs and kernels ----------------------------------------------------------------------

void OpenClModelExecutor::buildProgram(const ModelCall& call) {
  Program program;
  program.ctx = named(contexts_, call.names[0]);
  program.handle = opencl::buildCachedProgram(api_, program.ctx, device_.device, kPatternSource,
                                              "pattern", CallPoint::Launch);
  programs_.emplace(call.names[1], program);
}

void OpenClModelExecutor::releaseProgram(const ModelCall& call) {
  completeUserEvents();
  const Program program = take(programs_, call.names[0]);
  check(releasing([&] { return api_.releaseProgram(program.handle); }), CallPoint::Launch,
        "clReleaseProgram");
}

void OpenClModelExecutor::createKernel(const ModelCall& call) {
  const Program& program = named(programs_, call.names[0]);
  cl_int status = CL_SUCCESS;
  Kernel kernel;
  kernel.handle = api_.createKernel(program.handle, kPatternKernel, &status);
  check(status, CallPoint::Launch, "clCreateKernel");
  kernel.ctx = program.ctx;
  kernels_.emplace(call.names[1], std::move(kernel));
}

void OpenClModelExecutor::releaseKernel(const ModelCall& call) {
  completeUserEvents();
  Kernel kernel = take(kernels_, call.names[0]);
  check(releasing([&] { return api_.releaseKernel(kernel.handle); }), CallPoint::Launch,
        "clReleaseKernel");
  // Only once the release returned: another thread's checkCallbacks then expects the argument's
  // destructor callbacks.
  if (kernel.arg) --kernel.arg->kernelHolds;
}

void OpenClModelExecutor::ndrange(const ModelCall& call) {
  Queue& queue = named(queues_, call.names[0]);
  Kernel& kernel = named(kernels_, call.names[1]);
  const MemObjectPtr& buffer = named(buffers_, call.names[2]);
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

// ---- transfers ---------------------------------------------------------------------------------

void OpenClModelExecutor::writeBuffer(const ModelCall& call) {
  Queue& queue = named(queues_, call.names[0]);
  MemObject& buffer = *named(buffers_, call.names[1]);
  // A large buffer is written at the windows that reads check: the host stages those alone.
  const std::vector<Window> windows = checkedWindows(buffer.bytes);
  const Generated what{Generated::Kind::Seeded, static_cast<uint32_t>(call.arg("seed")), 0};
  auto held = std::make_unique<std::vector<std::byte>>(generatedBytes(what, windows));
  std::vector<std::byte>& bytes = *held;
  const CommandPtr node = enqueue(
      call, "clEnqueueWriteBuffer", queue, {buffer.ctx}, {buffer.memory.get()}, listOf(call, 2, 0),
      [&](cl_uint n, const cl_event* list, cl_event* made) {
        return eachWindow(windows, n, list, made, held,
                          [&](const Window& window, size_t at, cl_uint count, const cl_event* after,
                              cl_event* event) {
                            return api_.enqueueWriteBuffer(queue.handle, buffer.mem, CL_FALSE,
                                                           window.offset, window.bytes,
                                                           bytes.data() + at, count, after, event);
                          });
      },
      CallPoint::CopyToDevice);
  if (!node) return;
  for (const Window& window : windows)
    buffer.memory->shadow.assign(window.offset, window.bytes, what);
  node->staged = std::move(bytes);
}

void OpenClModelExecutor::fillFrom(const ModelCall& call, const MemObject& object) {
  Queue& queue = named(queues_, call.names[0]);
  const auto pattern = static_cast<uint32_t>(call.arg("pattern"));
  const size_t size = object.bytes / 4 * 4;
  const CommandPtr node = enqueue(
      call, "clEnqueueFillBuffer", queue, {object.ctx}, {object.memory.get()}, listOf(call, 2, 0),
      [&](cl_uint n, const cl_event* list, cl_event* made) {
        return api_.enqueueFillBuffer(queue.handle, object.mem, &pattern, 4, 0, size, n, list,
                                      made);
      },
      CallPoint::CopyToDevice);
  if (node) {
    object.memory->shadow.assign(object.offset, size,
                                 Generated{Generated::Kind::Pattern, pattern, object.offset});
  }
}

void OpenClModelExecutor::fillBuffer(const ModelCall& call) {
  fillFrom(call, *named(buffers_, call.names[1]));
}

void OpenClModelExecutor::fillSubBuffer(const ModelCall& call) {
  fillFrom(call, *named(subBuffers_, call.names[1]));
}

void OpenClModelExecutor::copyBuffer(const ModelCall& call) {
  Queue& queue = named(queues_, call.names[0]);
  MemObject& src = *named(buffers_, call.names[1]);
  MemObject& dst = *named(buffers_, call.names[2]);
  const size_t size = std::min(src.bytes, dst.bytes);
  const CommandPtr node = enqueue(
      call, "clEnqueueCopyBuffer", queue, {src.ctx, dst.ctx}, {src.memory.get(), dst.memory.get()},
      listOf(call, 3, 0),
      [&](cl_uint n, const cl_event* list, cl_event* made) {
        return api_.enqueueCopyBuffer(queue.handle, src.mem, dst.mem, 0, 0, size, n, list, made);
      },
      CallPoint::CopyToDevice);
  if (!node) return;
  dst.memory->shadow.copyFrom(src.memory->shadow, 0, 0, size);
}

/// The check of a blocking read as a wait: in order, the read waits for everything enqueued before
/// it; out of order, for what it lists. When the check fails the runtime may still write the
/// host memory it was given, so that memory is left to the process's exit.
void OpenClModelExecutor::blockingReadReturned(const CommandPtr& node, const Queue& queue,
                                               std::unique_ptr<std::vector<std::byte>>& held) {
  try {
    afterWait(node->what + " (blocking)", queue.inOrder ? queue.inFlight : std::vector{node});
  } catch (const DeviceError&) {
    (void)held.release();
    throw;
  }
}

/// Before a blocking read: the user events it lists are set with the others, since a blocking
/// read waiting on an unset one would block forever.
void OpenClModelExecutor::completeListed(const ModelCall& call, size_t fixed) {
  std::vector<CommandPtr> listed;
  for (const std::string& name : listOf(call, fixed, 0)) {
    const Event& event = named(events_, name);
    if (event.node && event.node->unset) listed.push_back(event.node);
  }
  completeUserEvents(listed);
}

cl_int OpenClModelExecutor::eachWindow(const std::vector<Window>& windows, cl_uint n,
                                       const cl_event* list, cl_event* made,
                                       std::unique_ptr<std::vector<std::byte>>& host,
                                       const WindowCall& one) {
  size_t at = 0;
  cl_event before = nullptr;
  for (size_t i = 0; i < windows.size(); ++i) {
    const bool last = i + 1 == windows.size();
    cl_event event = nullptr;
    const cl_int status = i == 0 ? one(windows[i], at, n, list, last ? made : &event)
                                 : one(windows[i], at, 1, &before, last ? made : &event);
    if (before != nullptr) api_.releaseEvent(before);
    if (status != CL_SUCCESS) {
      if (i > 0) (void)host.release();
      return status;
    }
    before = event;
    at += windows[i].bytes;
  }
  return CL_SUCCESS;
}

/// A blocking read of `object` on `queue`, checked as a wait and against the shadow.
void OpenClModelExecutor::readBack(const ModelCall& call, Queue& queue, const MemObject& object,
                                   const char* what) {
  const bool image = object.width != 0;
  // A large buffer is read at windows: its start, its end and across each power of two.
  const std::vector<Window> windows =
      image ? std::vector{Window{0, object.bytes}} : checkedWindows(object.bytes);
  size_t total = 0;
  for (const Window& window : windows)
    total += window.bytes;
  auto held = std::make_unique<std::vector<std::byte>>(total);
  std::vector<std::byte>& read = *held;
  const char* clCall = image ? "clEnqueueReadImage" : "clEnqueueReadBuffer";
  const CommandPtr node = enqueue(
      call, clCall, queue, {object.ctx}, {object.memory.get()}, listOf(call, 2, 0),
      [&](cl_uint n, const cl_event* list, cl_event* made) {
        completeListed(call, 2);
        if (!image) {
          return eachWindow(windows, n, list, made, held,
                            [&](const Window& window, size_t at, cl_uint count,
                                const cl_event* after, cl_event* event) {
                              return api_.enqueueReadBuffer(queue.handle, object.mem, CL_TRUE,
                                                            window.offset, window.bytes,
                                                            read.data() + at, count, after, event);
                            });
        }
        const size_t origin[3] = {0, 0, 0};
        const size_t region[3] = {object.width, object.height, 1};
        return api_.enqueueReadImage(queue.handle, object.mem, CL_TRUE, origin, region, 0, 0,
                                     read.data(), n, list, made);
      },
      CallPoint::CopyToHost);
  if (!node) return;
  blockingReadReturned(node, queue, held);
  compare(*object.memory, object.offset, windows, read,
          std::string(what) + " " + object.name + " (" + node->what + ")");
}

void OpenClModelExecutor::readBuffer(const ModelCall& call) {
  readBack(call, named(queues_, call.names[0]), *named(buffers_, call.names[1]), "buffer");
}

void OpenClModelExecutor::readSubBuffer(const ModelCall& call) {
  readBack(call, named(queues_, call.names[0]), *named(subBuffers_, call.names[1]), "sub-buffer");
}

void OpenClModelExecutor::writeImage(const ModelCall& call) {
  Queue& queue = named(queues_, call.names[0]);
  MemObject& image = *named(imageObjects_, call.names[1]);
  if (image.mem == nullptr) return;
  const Generated what{Generated::Kind::Seeded, static_cast<uint32_t>(call.arg("seed")), 0};
  std::vector<std::byte> bytes = generatedBytes(what, {Window{0, image.bytes}});
  const CommandPtr node = enqueue(
      call, "clEnqueueWriteImage", queue, {image.ctx}, {image.memory.get()}, listOf(call, 2, 0),
      [&](cl_uint n, const cl_event* list, cl_event* made) {
        const size_t origin[3] = {0, 0, 0};
        const size_t region[3] = {image.width, image.height, 1};
        return api_.enqueueWriteImage(queue.handle, image.mem, CL_FALSE, origin, region, 0, 0,
                                      bytes.data(), n, list, made);
      },
      CallPoint::CopyToDevice);
  if (!node) return;
  image.memory->shadow.assign(0, image.bytes, what);
  node->staged = std::move(bytes);
}

void OpenClModelExecutor::readImage(const ModelCall& call) {
  MemObject& image = *named(imageObjects_, call.names[1]);
  if (image.mem == nullptr) return;
  readBack(call, named(queues_, call.names[0]), image, "image");
}

// ---- events ------------------------------------------------------------------------------------

void OpenClModelExecutor::marker(const ModelCall& call) {
  Queue& queue = named(queues_, call.names[0]);
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
  events_.emplace(name, std::move(event));
}

void OpenClModelExecutor::barrier(const ModelCall& call) {
  Queue& queue = named(queues_, call.names[0]);
  const CommandPtr node = enqueue(
      call, "clEnqueueBarrierWithWaitList", queue, {}, {}, listOf(call, 1, 0),
      [&](cl_uint n, const cl_event* list, cl_event* made) {
        return api_.enqueueBarrierWithWaitList(queue.handle, n, list, made);
      },
      CallPoint::Launch, /*waitsForAll=*/true);
  if (node && !queue.inOrder) queue.barrier = node;
}

void OpenClModelExecutor::flush(const ModelCall& call) {
  check(api_.flush(named(queues_, call.names[0]).handle), CallPoint::Sync, "clFlush");
}

void OpenClModelExecutor::finish(const ModelCall& call) {
  Queue& queue = named(queues_, call.names[0]);
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
    const Event& event = named(events_, name);
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
  event.ctx = named(contexts_, call.names[0]);
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
  events_.emplace(call.names[1], std::move(event));
}

void OpenClModelExecutor::setUserEventStatus(const ModelCall& call) {
  const Event& event = named(events_, call.names[0]);
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
  const Event& event = named(events_, call.names[0]);
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
  const Event event = take(events_, call.names[0]);
  if (event.handle == nullptr) return;
  check(api_.releaseEvent(event.handle), CallPoint::Sync, "clReleaseEvent " + call.names[0]);
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

}  // namespace

std::unique_ptr<ModelExecutor> makeOpenClModelExecutor(std::string_view deviceText) {
  return std::make_unique<OpenClModelExecutor>(openClApi(), deviceText, kCallbackGraceMs);
}

std::unique_ptr<ModelExecutor> makeOpenClModelExecutor(const OpenClApi& api,
                                                       std::string_view deviceText,
                                                       int callbackGraceMs) {
  return std::make_unique<OpenClModelExecutor>(api, deviceText, callbackGraceMs);
}

}  // namespace gpufuzz
