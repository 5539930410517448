// OpenClBackend.cpp: the opencl backend on OpenCL 1.2.
#include "renderer/opencl/OpenClBackend.h"

#include <iterator>
#include <string>
#include <utility>

#include "renderer/device/HandleChecks.h"
#include "renderer/opencl/RasterProgram.h"

namespace gpufuzz {

namespace {

void check(cl_int status, CallPoint point, const char* call) {
  if (status != CL_SUCCESS)
    throw DeviceError(point, std::string(call) + ": " + clErrorName(status));
}

}  // namespace

OpenClBackend::OpenClBackend(const OpenClApi& api, std::string_view deviceText)
    : api_(api), device_(selectOpenClDevice(listOpenClDevices(api), deviceText)) {}

OpenClBackend::~OpenClBackend() {
  for (auto& [id, buffer] : buffers_)
    api_.releaseMemObject(buffer.mem);
  for (auto& [id, context] : contexts_) {
    api_.finish(context.queue);
    release(context, CallPoint::CtxDestroy);
  }
  held_.release(api_);
}

cl_context OpenClBackend::contextHandle(ContextId ctx) const {
  auto it = contexts_.find(ctx);
  return it == contexts_.end() ? nullptr : it->second.handle;
}

cl_command_queue OpenClBackend::queueHandle(ContextId ctx) const {
  auto it = contexts_.find(ctx);
  return it == contexts_.end() ? nullptr : it->second.queue;
}

cl_mem OpenClBackend::bufferHandle(BufferId buf) const {
  auto it = buffers_.find(buf);
  return it == buffers_.end() ? nullptr : it->second.mem;
}

OpenClBackend::Context& OpenClBackend::liveContext(ContextId ctx, CallPoint point,
                                                   const char* call) {
  return findHandle(contexts_, ctx, nextContext_, point,
                    std::string(call) + ": not called: context " + std::to_string(ctx),
                    "destroyed");
}

const OpenClBackend::Buffer& OpenClBackend::ownedBuffer(BufferId buf, ContextId ctx,
                                                        uint64_t bytesNeeded, CallPoint point,
                                                        const char* call, const char* role) const {
  const std::string what =
      std::string(call) + ": not called: " + role + " buffer " + std::to_string(buf);
  return checkBufferServes(findHandle(buffers_, buf, nextBuffer_, point, what, "freed"), ctx,
                           bytesNeeded, point, what);
}

void OpenClBackend::enqueued(Context& context, cl_event event, const char* call,
                             std::vector<std::byte> staged) {
  context.inFlight.push_back(Command{event, call, std::move(staged)});
}

std::optional<PendingWork> OpenClBackend::collect(Context& context) {
  std::vector<PendingCommand> pending;
  std::vector<Command> still;
  // Taken out first: the loop's runtime calls let other threads' calls change the member.
  std::vector<Command> asked = std::exchange(context.inFlight, {});
  for (Command& command : asked) {
    const EventAfterWait after = eventAfterWait(api_, command.event);
    if (!after.stale.empty()) pending.push_back(PendingCommand{command.call, after.stale});
    if (after.done) {
      api_.releaseEvent(command.event);  // complete or terminated: the runtime is done with it
    } else {
      still.push_back(std::move(command));
    }
  }
  context.inFlight.insert(context.inFlight.begin(), std::make_move_iterator(still.begin()),
                          std::make_move_iterator(still.end()));
  if (pending.empty()) return std::nullopt;
  return PendingWork{context.lastWait, describePendingCommands(pending)};
}

std::optional<DeviceError> OpenClBackend::release(Context& context, CallPoint point) {
  std::optional<DeviceError> first;
  const auto step = [&](cl_int status, const char* call) {
    if (status != CL_SUCCESS && !first) {
      first.emplace(point, std::string(call) + ": " + clErrorName(status));
    }
  };
  // Emptied before the first release: no other thread's call finds a handle while it is released.
  Context gone = std::exchange(context, Context{});
  for (Command& command : gone.inFlight) {
    if (!command.staged.empty()) abandonedStaging_.push_back(std::move(command.staged));
    step(api_.releaseEvent(command.event), "clReleaseEvent");
  }
  if (gone.kernel != nullptr) step(api_.releaseKernel(gone.kernel), "clReleaseKernel");
  if (gone.program != nullptr) step(api_.releaseProgram(gone.program), "clReleaseProgram");
  if (gone.queue != nullptr) step(api_.releaseCommandQueue(gone.queue), "clReleaseCommandQueue");
  if (gone.handle != nullptr) step(api_.releaseContext(gone.handle), "clReleaseContext");
  return first;
}

ContextId OpenClBackend::createContext() {
  constexpr CallPoint kPoint = CallPoint::CtxCreate;
  const cl_context_properties properties[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(device_.platform), 0};
  Context context;
  cl_int status = CL_SUCCESS;
  context.handle = api_.createContext(properties, 1, &device_.device, nullptr, nullptr, &status);
  check(status, kPoint, "clCreateContext");
  context.queue = api_.createCommandQueue(context.handle, device_.device, 0, &status);
  if (status != CL_SUCCESS) {
    context.queue = nullptr;
    release(context, kPoint);
    check(status, kPoint, "clCreateCommandQueue");
  }
  const ContextId id = nextContext_++;
  contexts_.emplace(id, std::move(context));
  return id;
}

void OpenClBackend::destroyContext(ContextId ctx) {
  constexpr CallPoint kPoint = CallPoint::CtxDestroy;
  Context& context = liveContext(ctx, kPoint, "clReleaseContext");
  const cl_int finished = api_.finish(context.queue);
  context.lastWait = "clFinish";
  std::optional<PendingWork> pending;
  if (finished == CL_SUCCESS) pending = collect(context);
  std::optional<DeviceError> failure = release(context, kPoint);
  contexts_.erase(ctx);
  releasedWaits_.record(ctx, pending);
  check(finished, kPoint, "clFinish");
  if (failure) throw *failure;
}

BufferId OpenClBackend::allocBuffer(ContextId ctx, uint64_t bytes) {
  constexpr CallPoint kPoint = CallPoint::BufAlloc;
  const Context& context = liveContext(ctx, kPoint, "clCreateBuffer");
  cl_int status = CL_SUCCESS;
  cl_mem mem = api_.createBuffer(context.handle, CL_MEM_READ_WRITE, static_cast<size_t>(bytes),
                                 nullptr, &status);
  check(status, kPoint, "clCreateBuffer");
  const BufferId id = nextBuffer_++;
  buffers_.emplace(id, Buffer{ctx, mem, bytes});
  bytesInUse_ += bytes;
  return id;
}

void OpenClBackend::freeBuffer(BufferId buf) {
  auto it = buffers_.find(buf);
  if (it == buffers_.end()) {
    const bool freed = buf > 0 && buf < nextBuffer_;
    throw DeviceError(CallPoint::BufFree, "clReleaseMemObject: not called: buffer " +
                                              std::to_string(buf) +
                                              (freed ? " was already freed" : " is unknown"));
  }
  const Buffer buffer = it->second;
  buffers_.erase(it);
  bytesInUse_ -= buffer.bytes;
  check(api_.releaseMemObject(buffer.mem), CallPoint::BufFree, "clReleaseMemObject");
}

void OpenClBackend::copyToDevice(ContextId ctx, BufferId dst, std::span<const std::byte> src) {
  constexpr CallPoint kPoint = CallPoint::CopyToDevice;
  constexpr const char* kCall = "clEnqueueWriteBuffer";
  Context& context = liveContext(ctx, kPoint, kCall);
  const Buffer& buffer = ownedBuffer(dst, ctx, src.size(), kPoint, kCall, "destination");
  if (src.empty()) return;
  std::vector<std::byte> staged(src.begin(), src.end());
  cl_event event = nullptr;
  check(api_.enqueueWriteBuffer(context.queue, buffer.mem, CL_FALSE, 0, staged.size(),
                                staged.data(), 0, nullptr, &event),
        kPoint, kCall);
  enqueued(context, event, kCall, std::move(staged));
}

void OpenClBackend::copyToHost(ContextId ctx, BufferId src, std::span<std::byte> dst) {
  constexpr CallPoint kPoint = CallPoint::CopyToHost;
  constexpr const char* kCall = "clEnqueueReadBuffer";
  Context& context = liveContext(ctx, kPoint, kCall);
  const Buffer& buffer = ownedBuffer(src, ctx, dst.size(), kPoint, kCall, "source");
  if (dst.empty()) {  // a read of nothing is CL_INVALID_VALUE; the wait is still owed
    context.lastWait = "clFinish";
    check(api_.finish(context.queue), kPoint, "clFinish");
    return;
  }
  context.lastWait = "clEnqueueReadBuffer (blocking)";
  cl_event event = nullptr;
  check(api_.enqueueReadBuffer(context.queue, buffer.mem, CL_TRUE, 0, dst.size(), dst.data(), 0,
                               nullptr, &event),
        kPoint, kCall);
  enqueued(context, event, kCall);
}

void OpenClBackend::ensureKernel(Context& context) {
  if (context.kernel != nullptr) return;
  if (context.program == nullptr) {
    context.program =
        opencl::buildRasterProgram(api_, context.handle, device_.device, CallPoint::Launch);
  }
  cl_int status = CL_SUCCESS;
  cl_kernel kernel = api_.createKernel(context.program, opencl::kRasterKernelName, &status);
  check(status, CallPoint::Launch, "clCreateKernel");
  context.kernel = kernel;
}

void OpenClBackend::launch(ContextId ctx, const RasterLaunch& launch) {
  constexpr CallPoint kPoint = CallPoint::Launch;
  constexpr const char* kCall = "clEnqueueNDRangeKernel";
  Context& context = liveContext(ctx, kPoint, kCall);
  if (launch.textureCount > raster::kMaxTextures) {
    throw DeviceError(kPoint, std::string(kCall) +
                                  ": not called: " + std::to_string(launch.textureCount) +
                                  " textures, at most " + std::to_string(raster::kMaxTextures));
  }
  const uint64_t pixelBytes = uint64_t{launch.width} * launch.height * 4;
  const cl_mem framebuffer =
      ownedBuffer(launch.framebuffer, ctx, pixelBytes, kPoint, kCall, "framebuffer").mem;
  const cl_mem vertices =
      ownedBuffer(launch.vertices, ctx, uint64_t{launch.triangleCount} * sizeof(raster::Triangle),
                  kPoint, kCall, "vertex")
          .mem;
  cl_mem textures[raster::kMaxTextures] = {};
  const uint64_t texelBytes = uint64_t{launch.textureSize} * launch.textureSize * 4;
  for (uint32_t i = 0; i < launch.textureCount; ++i) {
    textures[i] = ownedBuffer(launch.textures[i], ctx, texelBytes, kPoint, kCall, "texture").mem;
  }
  if (pixelBytes == 0) return;  // an empty range is CL_INVALID_GLOBAL_WORK_SIZE; nothing to do

  ensureKernel(context);
  const auto arg = [&](cl_uint index, size_t size, const void* value) {
    check(api_.setKernelArg(context.kernel, index, size, value), kPoint, "clSetKernelArg");
  };
  arg(opencl::kArgFramebuffer, sizeof(cl_mem), &framebuffer);
  arg(opencl::kArgTriangles, sizeof(cl_mem), &vertices);
  for (uint32_t i = 0; i < raster::kMaxTextures; ++i) {
    // Unused slots are NULL buffers, which the spec allows for a __global pointer argument.
    arg(opencl::kArgFirstTexture + i, sizeof(cl_mem),
        i < launch.textureCount ? &textures[i] : nullptr);
  }
  arg(opencl::kArgTextureCount, sizeof(cl_uint), &launch.textureCount);
  arg(opencl::kArgTextureSize, sizeof(cl_uint), &launch.textureSize);
  arg(opencl::kArgWidth, sizeof(cl_uint), &launch.width);
  arg(opencl::kArgHeight, sizeof(cl_uint), &launch.height);
  arg(opencl::kArgTriangleCount, sizeof(cl_uint), &launch.triangleCount);
  arg(opencl::kArgCorruptXor, sizeof(cl_uint), &launch.corruptXor);
  const size_t global[2] = {launch.width, launch.height};
  cl_event event = nullptr;
  check(api_.enqueueNDRangeKernel(context.queue, context.kernel, 2, nullptr, global, nullptr, 0,
                                  nullptr, &event),
        kPoint, kCall);
  enqueued(context, event, kCall);
}

void OpenClBackend::synchronize(ContextId ctx) {
  Context& context = liveContext(ctx, CallPoint::Sync, "clFinish");
  context.lastWait = "clFinish";
  check(api_.finish(context.queue), CallPoint::Sync, "clFinish");
}

std::optional<PendingWork> OpenClBackend::pendingAfterWait(ContextId ctx) {
  if (std::optional<PendingWork> released = releasedWaits_.take(ctx)) return released;
  auto it = contexts_.find(ctx);
  if (it == contexts_.end()) return std::nullopt;
  return collect(it->second);
}

MemoryInUse OpenClBackend::memoryInUse() const {
  return MemoryInUse{bytesInUse_, buffers_.size(), contexts_.size()};
}

std::unique_ptr<OpenClBackend> makeOpenClBackend(std::string_view deviceText) {
  return std::make_unique<OpenClBackend>(openClApi(), deviceText);
}

}  // namespace gpufuzz
