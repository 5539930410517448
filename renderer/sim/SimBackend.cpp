// SimBackend.cpp: the deterministic CPU device.
#include "renderer/sim/SimBackend.h"

#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "renderer/device/DeviceError.h"

namespace gpufuzz {

namespace {

struct Upload {
  BufferId dst;
  std::vector<std::byte> bytes;
};
struct Kernel {
  RasterLaunch launch;
};
/// A free made while queued work still referenced the buffer: it happens in stream order.
struct DeferredFree {
  BufferId buf;
};
using Command = std::variant<Upload, Kernel, DeferredFree>;

class SimBackend final : public Backend {
 public:
  explicit SimBackend(SimLimits limits) : limits_(limits) {}

  /// The device's capacity: what is in use now and `bytes` more.
  bool leaveDeviceMemory(uint64_t bytes) override {
    const uint64_t used = memoryInUse().bytes;
    limits_.capacityBytes = bytes > UINT64_MAX - used ? UINT64_MAX : used + bytes;
    return true;
  }

  std::string_view name() const override { return "sim"; }

  ContextId createContext() override {
    reserve(CallPoint::CtxCreate, limits_.contextBytes);
    const ContextId id = nextContext_++;
    contexts_[id] = Context{};
    liveContexts_.insert(id);
    inUse_.bytes += limits_.contextBytes;
    ++inUse_.contexts;
    return id;
  }

  void destroyContext(ContextId ctx) override {
    Context& c = liveContext(CallPoint::CtxDestroy, ctx);
    drain(CallPoint::CtxDestroy, ctx);
    c.handleLive = false;
    liveContexts_.erase(ctx);
    releaseContextIfUnused(ctx);
  }

  BufferId allocBuffer(ContextId ctx, uint64_t bytes) override {
    Context& c = liveContext(CallPoint::BufAlloc, ctx);
    if (bytes == 0) fail(CallPoint::BufAlloc, "SIM_INVALID_VALUE", "zero-byte allocation");
    reserve(CallPoint::BufAlloc, bytes);
    const BufferId id = nextBuffer_++;
    buffers_[id] = Buffer{ctx, bytes, {}, true, true};
    ++c.buffersHeld;
    inUse_.bytes += bytes;
    ++inUse_.buffers;
    return id;
  }

  void freeBuffer(BufferId buf) override {
    Buffer& b = handle(CallPoint::BufFree, buf);
    b.handleLive = false;
    Context& owner = contexts_.at(b.owner);
    if (owner.handleLive && referencedByQueuedWork(buf)) {
      owner.queue.push_back(DeferredFree{buf});
      return;
    }
    releaseMemory(buf);
  }

  void copyToDevice(ContextId ctx, BufferId dst, std::span<const std::byte> src) override {
    Context& c = liveContext(CallPoint::CopyToDevice, ctx);
    const Buffer& b = handle(CallPoint::CopyToDevice, dst);
    if (src.size() > b.bytes) {
      fail(CallPoint::CopyToDevice, "SIM_OUT_OF_BOUNDS",
           "upload of " + std::to_string(src.size()) + " bytes into a " + std::to_string(b.bytes) +
               "-byte buffer");
    }
    c.queue.push_back(Upload{dst, std::vector<std::byte>(src.begin(), src.end())});
  }

  void copyToHost(ContextId ctx, BufferId src, std::span<std::byte> dst) override {
    liveContext(CallPoint::CopyToHost, ctx);
    drain(CallPoint::CopyToHost, ctx);
    Buffer& b = resident(CallPoint::CopyToHost, src, "copy to host");
    if (dst.size() > b.bytes) {
      fail(CallPoint::CopyToHost, "SIM_OUT_OF_BOUNDS",
           "copy of " + std::to_string(dst.size()) + " bytes from a " + std::to_string(b.bytes) +
               "-byte buffer");
    }
    std::memcpy(dst.data(), storage(b).data(), dst.size());
  }

  void launch(ContextId ctx, const RasterLaunch& l) override {
    Context& c = liveContext(CallPoint::Launch, ctx);
    checkExtent(l.framebuffer, uint64_t{l.width} * l.height * 4, "framebuffer");
    checkExtent(l.vertices, uint64_t{l.triangleCount} * sizeof(raster::Triangle), "vertex buffer");
    if (l.textureCount > raster::kMaxTextures) {
      fail(CallPoint::Launch, "SIM_INVALID_VALUE", "too many textures");
    }
    for (uint32_t i = 0; i < l.textureCount; ++i) {
      checkExtent(l.textures[i], uint64_t{l.textureSize} * l.textureSize * 4, "texture");
    }
    c.queue.push_back(Kernel{l});
  }

  void synchronize(ContextId ctx) override {
    liveContext(CallPoint::Sync, ctx);
    drain(CallPoint::Sync, ctx);
  }

  /// The sim's queue is its completion state: a drain leaves it empty, so anything left in it
  /// after a wait is work that wait did not complete.
  std::optional<PendingWork> pendingAfterWait(ContextId ctx) override {
    auto it = contexts_.find(ctx);
    if (it == contexts_.end() || it->second.queue.empty()) return std::nullopt;
    std::vector<PendingCommand> commands;
    for (const Command& command : it->second.queue) {
      commands.push_back(PendingCommand{commandName(command), "still queued"});
    }
    return PendingWork{"the sim queue's drain", describePendingCommands(commands)};
  }

  /// Kept as objects come and go: a process that runs many sequences (--persistent) keeps every
  /// object it ever made, for the messages about freed ones, and must not count them all again
  /// at every allocation.
  MemoryInUse memoryInUse() const override { return inUse_; }
  std::optional<std::string> failureError(FailureKind kind, CallPoint) const override {
    switch (kind) {
      case FailureKind::DeviceMemory:
        return "SIM_OUT_OF_MEMORY";
      case FailureKind::HostMemory:
        return "SIM_OUT_OF_HOST_MEMORY";
      case FailureKind::DeviceLost:
        return "SIM_DEVICE_LOST";
    }
    return std::nullopt;
  }

 private:
  struct Buffer {
    ContextId owner = 0;
    uint64_t bytes = 0;
    std::vector<std::byte> data;  // materialized on first touch
    bool handleLive = true;       // not yet passed to freeBuffer
    bool resident = true;         // memory not yet returned
  };
  struct Context {
    bool handleLive = true;  // not yet passed to destroyContext
    bool resident = true;    // memory not yet returned
    uint64_t buffersHeld = 0;
    std::deque<Command> queue;
  };

  [[noreturn]] static void fail(CallPoint point, const std::string& code,
                                const std::string& detail) {
    throw DeviceError(point, std::string(callPointName(point)) + ": " + code + ": " + detail);
  }

  void reserve(CallPoint point, uint64_t bytes) {
    const uint64_t used = memoryInUse().bytes;
    if (bytes > limits_.capacityBytes - used) {
      fail(point, "SIM_OUT_OF_MEMORY",
           std::to_string(bytes) + " bytes requested, " +
               std::to_string(limits_.capacityBytes - used) + " free");
    }
  }

  Context& liveContext(CallPoint point, ContextId ctx) {
    auto it = contexts_.find(ctx);
    if (it == contexts_.end() || !it->second.handleLive) {
      fail(point, "SIM_INVALID_CONTEXT", "context " + std::to_string(ctx) + " is not alive");
    }
    return it->second;
  }

  /// A buffer handle that has not been freed.
  Buffer& handle(CallPoint point, BufferId buf) {
    auto it = buffers_.find(buf);
    if (it == buffers_.end() || !it->second.handleLive) {
      fail(point, "SIM_INVALID_VALUE",
           "buffer " + std::to_string(buf) +
               (it == buffers_.end() ? " does not exist" : " was already freed"));
    }
    return it->second;
  }

  /// A buffer whose memory is still there, as a command executing now needs it.
  Buffer& resident(CallPoint point, BufferId buf, const std::string& what) {
    auto it = buffers_.find(buf);
    if (it == buffers_.end() || !it->second.resident) {
      fail(point, "SIM_USE_AFTER_FREE",
           what + " touched buffer " + std::to_string(buf) +
               " after its memory was freed (an invalid global access under compute-sanitizer)");
    }
    return it->second;
  }

  void checkExtent(BufferId buf, uint64_t needed, const char* what) {
    const Buffer& b = handle(CallPoint::Launch, buf);
    if (needed > b.bytes) {
      fail(CallPoint::Launch, "SIM_OUT_OF_BOUNDS",
           std::string(what) + " of " + std::to_string(b.bytes) + " bytes, launch needs " +
               std::to_string(needed));
    }
  }

  static std::vector<std::byte>& storage(Buffer& b) {
    if (b.data.size() != b.bytes) b.data.resize(b.bytes);
    return b.data;
  }

  bool referencedByQueuedWork(BufferId buf) const {
    for (const ContextId id : liveContexts_) {  // a destroyed context's queue was drained
      for (const Command& command : contexts_.at(id).queue) {
        if (references(command, buf)) return true;
      }
    }
    return false;
  }

  static std::string commandName(const Command& command) {
    if (std::holds_alternative<Upload>(command)) return "upload";
    if (std::holds_alternative<Kernel>(command)) return "launch";
    return "deferred free";
  }

  static bool references(const Command& command, BufferId buf) {
    if (const auto* u = std::get_if<Upload>(&command)) return u->dst == buf;
    if (const auto* k = std::get_if<Kernel>(&command)) {
      const RasterLaunch& l = k->launch;
      if (l.framebuffer == buf || l.vertices == buf) return true;
      for (uint32_t i = 0; i < l.textureCount; ++i) {
        if (l.textures[i] == buf) return true;
      }
    }
    return false;
  }

  void releaseMemory(BufferId buf) {
    Buffer& b = buffers_.at(buf);
    b.resident = false;
    b.data = {};
    inUse_.bytes -= b.bytes;
    --inUse_.buffers;
    --contexts_.at(b.owner).buffersHeld;
    releaseContextIfUnused(b.owner);
  }

  void releaseContextIfUnused(ContextId ctx) {
    Context& c = contexts_.at(ctx);
    if (c.handleLive || c.buffersHeld != 0 || !c.resident) return;
    c.resident = false;
    inUse_.bytes -= limits_.contextBytes;
    --inUse_.contexts;
  }

  /// Executes `ctx`'s queue in order. A failing command drops the rest of the queue (the
  /// context's work is lost, as after a device fault) and fails the waiting call.
  void drain(CallPoint point, ContextId ctx) {
    std::deque<Command> queue = std::move(contexts_.at(ctx).queue);
    contexts_.at(ctx).queue.clear();
    for (const Command& command : queue)
      execute(point, command);
  }

  void execute(CallPoint point, const Command& command) {
    if (const auto* u = std::get_if<Upload>(&command)) {
      Buffer& b = resident(point, u->dst, "a queued upload");
      std::memcpy(storage(b).data(), u->bytes.data(), u->bytes.size());
    } else if (const auto* k = std::get_if<Kernel>(&command)) {
      rasterize(point, k->launch);
    } else {
      releaseMemory(std::get<DeferredFree>(command).buf);
    }
  }

  void rasterize(CallPoint point, const RasterLaunch& l) {
    std::vector<raster::Triangle> triangles(l.triangleCount);
    Buffer& vertices = resident(point, l.vertices, "a queued launch");
    std::memcpy(triangles.data(), storage(vertices).data(),
                triangles.size() * sizeof(raster::Triangle));
    std::vector<const std::byte*> textures(l.textureCount);
    for (uint32_t i = 0; i < l.textureCount; ++i) {
      textures[i] = storage(resident(point, l.textures[i], "a queued launch")).data();
    }
    auto& fb = storage(resident(point, l.framebuffer, "a queued launch"));
    const auto sample = [&](uint32_t texture, uint32_t x, uint32_t y) {
      uint32_t value = 0;
      std::memcpy(&value, textures[texture] + (uint64_t{y} * l.textureSize + x) * 4, 4);
      return value;
    };
    std::vector<uint32_t> image(uint64_t{l.width} * l.height);
    std::memcpy(image.data(), fb.data(), image.size() * 4);
    raster::rasterizeHost(image.data(), l.width, l.height, triangles.data(), l.triangleCount,
                          l.textureCount, l.textureSize, sample);
    if (l.corruptXor != 0) {
      for (uint32_t& pixel : image)
        pixel ^= l.corruptXor;
    }
    std::memcpy(fb.data(), image.data(), image.size() * 4);
  }

  SimLimits limits_;
  MemoryInUse inUse_;  // what the resident contexts and buffers hold
  std::map<ContextId, Context> contexts_;
  std::set<ContextId> liveContexts_;  // handles not destroyed: the only ones with queues
  std::map<BufferId, Buffer> buffers_;
  ContextId nextContext_ = 1;
  BufferId nextBuffer_ = 1;
};

}  // namespace

std::unique_ptr<Backend> makeSimBackend(SimLimits limits) {
  return std::make_unique<SimBackend>(limits);
}

}  // namespace gpufuzz
