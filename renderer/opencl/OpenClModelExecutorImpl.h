// OpenClModelExecutorImpl.h: the opencl executor's state and handlers, shared by its files:
// OpenClModelExecutor.cpp (the table, waits and their checks), OpenClMemoryOps.cpp (memory
// objects, SVM and transfers) and OpenClEventOps.cpp (programs, kernels and events).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "renderer/device/DeviceError.h"
#include "renderer/device/ExecutorKit.h"
#include "renderer/device/ModelExecutor.h"
#include "renderer/opencl/MemoryShadow.h"
#include "renderer/opencl/OpenClApi.h"
#include "renderer/opencl/OpenClDeviceMemory.h"
#include "renderer/opencl/OpenClDevices.h"

namespace gpufuzz::clmodel {

/// What the executor's messages call it.
inline constexpr const char* kOwner = "opencl executor";

inline void check(cl_int status, CallPoint point, const std::string& call) {
  if (status != CL_SUCCESS) throw DeviceError(point, call + ": " + clErrorName(status));
}

/// A callback's record. The runtime may call a callback at any time, even after the executor is
/// gone (a run ends at its first failure), so records are left to the process's exit.
struct EventCallbackRecord {
  std::atomic<int> calls{0};
  std::atomic<cl_int> status{1};
};

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

class OpenClModelExecutor final : public ModelExecutor {
 public:
  OpenClModelExecutor(const OpenClApi& api, std::string_view deviceText, int graceMs);
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
  void setDefaultReleases(std::span<const DefaultRelease> releases) override {
    releases_.set(releases);
  }
  std::string leaked() override;

  /// Each operation of model opencl with its handler, and the kinds released another way.
  static const kit::OpTable<OpenClModelExecutor>& table();

 private:
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
  void releaseMemObject(kit::Kind<MemObjectPtr>& objects, const std::string& name);
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
  /// svm_free's work, and the release of an SVM leftover: the model gives svm two ending
  /// operations, so it has no default release.
  void freeSvm(const std::string& name);
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

  kit::Kind<cl_context> contexts_{kOwner, "context"};
  kit::Kind<Queue> queues_{kOwner, "queue"};
  kit::Kind<MemObjectPtr> buffers_{kOwner, "buffer"};
  kit::Kind<MemObjectPtr> subBuffers_{kOwner, "subbuffer"};
  kit::Kind<MemObjectPtr> imageObjects_{kOwner, "image"};
  kit::Kind<Svm> svms_{kOwner, "svm"};
  kit::Kind<Program> programs_{kOwner, "program"};
  kit::Kind<Kernel> kernels_{kOwner, "kernel"};
  kit::Kind<Event> events_{kOwner, "event"};
  kit::DefaultReleases releases_;

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

}  // namespace gpufuzz::clmodel
