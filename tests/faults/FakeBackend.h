// FakeBackend.h: a tiny in-memory Backend for tests of the device seam, recording what reaches it.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "renderer/device/Backend.h"

namespace gpufuzz::test {

class FakeBackend : public Backend {
 public:
  /// What reached the backend. Owned by the test so it outlives the Device that owns the backend.
  struct Log {
    std::map<BufferId, std::vector<std::byte>> memory;  // live buffers
    std::vector<ContextId> destroyed;
    std::vector<BufferId> freed;
    std::vector<RasterLaunch> launches;
    std::vector<std::string> calls;  // call point names, in order
  };

  explicit FakeBackend(Log& log) : log_(log) {}

  std::string_view name() const override { return "fake"; }

  ContextId createContext() override {
    log_.calls.emplace_back("ctx_create");
    return nextContext_++;
  }
  void destroyContext(ContextId ctx) override {
    log_.calls.emplace_back("ctx_destroy");
    log_.destroyed.push_back(ctx);
  }
  BufferId allocBuffer(ContextId, uint64_t bytes) override {
    log_.calls.emplace_back("buf_alloc");
    log_.memory[nextBuffer_] = std::vector<std::byte>(bytes);
    return nextBuffer_++;
  }
  void freeBuffer(BufferId buf) override {
    log_.calls.emplace_back("buf_free");
    log_.memory.erase(buf);
    log_.freed.push_back(buf);
  }
  void copyToDevice(ContextId, BufferId dst, std::span<const std::byte> src) override {
    log_.calls.emplace_back("copy_to_device");
    std::vector<std::byte>& mem = log_.memory[dst];
    mem.resize(std::max(mem.size(), src.size()));
    std::copy(src.begin(), src.end(), mem.begin());
  }
  void copyToHost(ContextId, BufferId src, std::span<std::byte> dst) override {
    log_.calls.emplace_back("copy_to_host");
    const std::vector<std::byte>& mem = log_.memory[src];
    std::copy_n(mem.begin(), std::min(mem.size(), dst.size()), dst.begin());
  }
  void launch(ContextId, const RasterLaunch& launch) override {
    log_.calls.emplace_back("launch");
    log_.launches.push_back(launch);
  }
  void synchronize(ContextId) override { log_.calls.emplace_back("sync"); }
  /// Its work completes as it is enqueued: no wait leaves anything pending.
  std::optional<PendingWork> pendingAfterWait(ContextId) override { return std::nullopt; }

  MemoryInUse memoryInUse() const override {
    MemoryInUse use;
    for (const auto& [id, bytes] : log_.memory) {
      use.bytes += bytes.size();
    }
    use.buffers = log_.memory.size();
    use.contexts = nextContext_ - 1 - log_.destroyed.size();
    return use;
  }

 private:
  Log& log_;
  // Ids unlike the creation ordinals the counters report, so a test cannot confuse the two.
  ContextId nextContext_ = 1;
  BufferId nextBuffer_ = 100;
};

}  // namespace gpufuzz::test
