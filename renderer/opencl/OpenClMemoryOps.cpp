// OpenClMemoryOps.cpp: the opencl executor's handlers of memory objects, SVM allocations and
// transfers, each checked against the host shadow.
#include <algorithm>
#include <cstdio>

#include "renderer/device/RuntimeSeam.h"
#include "renderer/opencl/OpenClModelExecutorImpl.h"

namespace gpufuzz::clmodel {

namespace {

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

void CL_CALLBACK destructorCallback(cl_mem, void* data) {
  auto* call = static_cast<DestructorCall*>(data);
  const std::lock_guard lock(call->record->mutex);
  call->record->order.push_back(call->index);
}

}  // namespace

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
  object->ctx = contexts_.named(call.names[0]);
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
  buffers_.add(object->name, object);
}

void OpenClModelExecutor::createSubBuffer(const ModelCall& call) {
  MemObjectPtr parent = buffers_.named(call.names[0]);
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
  subBuffers_.add(object->name, object);
}

// User events are set before the object is taken: a set that fails leaves it held, for the
// release that follows the failure.
void OpenClModelExecutor::releaseMemObject(kit::Kind<MemObjectPtr>& objects,
                                           const std::string& name) {
  completeUserEvents();
  const MemObjectPtr object = objects.take(name);
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
  object->ctx = contexts_.named(call.names[0]);
  object->width = call.arg("width");
  object->height = call.arg("height");
  object->bytes = object->width * object->height * 4;
  object->memory = std::make_shared<Memory>(object->bytes);
  if (!images_) {
    imageObjects_.add(object->name, object);
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
  imageObjects_.add(object->name, object);
}

void OpenClModelExecutor::releaseImage(const ModelCall& call) {
  releaseMemObject(imageObjects_, call.names[0]);
}

void OpenClModelExecutor::setDestructorCallback(const ModelCall& call) {
  MemObject& object = *buffers_.named(call.names[0]);
  registerDestructor(object, object.callbacks);
  ++object.callbacks;
}

// ---- SVM ---------------------------------------------------------------------------------------

void OpenClModelExecutor::svmAlloc(const ModelCall& call) {
  Svm svm;
  svm.ctx = contexts_.named(call.names[0]);
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
  svms_.add(call.names[1], std::move(svm));
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

void OpenClModelExecutor::svmFree(const ModelCall& call) {
  freeSvm(call.names[0]);
}

// The allocation leaves the executor's names only once freed: a wait before the free that fails
// leaves it held, for the release that follows the failure.
void OpenClModelExecutor::freeSvm(const std::string& name) {
  freeSvmNow(svms_.named(name), name);
  svms_.erase(name);
}

void OpenClModelExecutor::enqueueSvmFree(const ModelCall& call) {
  Queue& queue = queues_.named(call.names[0]);
  Svm& svm = svms_.named(call.names[1]);
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
  Queue& queue = queues_.named(call.names[0]);
  Svm& svm = svms_.named(call.names[1]);
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
  Queue& queue = queues_.named(call.names[0]);
  Svm& dst = svms_.named(call.names[1]);
  Svm& src = svms_.named(call.names[2]);
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
  Queue& queue = queues_.named(call.names[0]);
  Svm& svm = svms_.named(call.names[1]);
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
// ---- transfers ---------------------------------------------------------------------------------

void OpenClModelExecutor::writeBuffer(const ModelCall& call) {
  Queue& queue = queues_.named(call.names[0]);
  MemObject& buffer = *buffers_.named(call.names[1]);
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
  Queue& queue = queues_.named(call.names[0]);
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
  fillFrom(call, *buffers_.named(call.names[1]));
}

void OpenClModelExecutor::fillSubBuffer(const ModelCall& call) {
  fillFrom(call, *subBuffers_.named(call.names[1]));
}

void OpenClModelExecutor::copyBuffer(const ModelCall& call) {
  Queue& queue = queues_.named(call.names[0]);
  MemObject& src = *buffers_.named(call.names[1]);
  MemObject& dst = *buffers_.named(call.names[2]);
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
    const Event& event = events_.named(name);
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
  readBack(call, queues_.named(call.names[0]), *buffers_.named(call.names[1]), "buffer");
}

void OpenClModelExecutor::readSubBuffer(const ModelCall& call) {
  readBack(call, queues_.named(call.names[0]), *subBuffers_.named(call.names[1]), "sub-buffer");
}

void OpenClModelExecutor::writeImage(const ModelCall& call) {
  Queue& queue = queues_.named(call.names[0]);
  MemObject& image = *imageObjects_.named(call.names[1]);
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
  MemObject& image = *imageObjects_.named(call.names[1]);
  if (image.mem == nullptr) return;
  readBack(call, queues_.named(call.names[0]), image, "image");
}

}  // namespace gpufuzz::clmodel
