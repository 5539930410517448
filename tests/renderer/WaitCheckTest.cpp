// WaitCheckTest.cpp: the seam checks every wait against the backend's own completion state. A
// stand-in sim whose waits return early (they skip the drain) must be reported by the call that
// waited, naming what was left; the real sim's waits must pass.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "renderer/device/Device.h"
#include "renderer/sim/SimBackend.h"

namespace gpufuzz {
namespace {

/// The sim, except that synchronize returns without draining the queue.
class EarlySyncSim final : public Backend {
 public:
  std::string_view name() const override { return "sim"; }
  ContextId createContext() override { return sim_->createContext(); }
  void destroyContext(ContextId ctx) override { sim_->destroyContext(ctx); }
  BufferId allocBuffer(ContextId ctx, uint64_t bytes) override {
    return sim_->allocBuffer(ctx, bytes);
  }
  void freeBuffer(BufferId buf) override { sim_->freeBuffer(buf); }
  void copyToDevice(ContextId ctx, BufferId dst, std::span<const std::byte> src) override {
    sim_->copyToDevice(ctx, dst, src);
  }
  void copyToHost(ContextId ctx, BufferId src, std::span<std::byte> dst) override {
    sim_->copyToHost(ctx, src, dst);
  }
  void launch(ContextId ctx, const RasterLaunch& l) override { sim_->launch(ctx, l); }
  void synchronize(ContextId) override {}
  std::optional<PendingWork> pendingAfterWait(ContextId ctx) override {
    return sim_->pendingAfterWait(ctx);
  }
  MemoryInUse memoryInUse() const override { return sim_->memoryInUse(); }

 private:
  std::unique_ptr<Backend> sim_ = makeSimBackend();
};

std::string errorOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const DeviceError& e) {
    return e.what();
  }
  return "no DeviceError";
}

TEST(WaitCheck, ASyncThatReturnsEarlyIsAnErrorNamingWhatWasLeft) {
  Device device(std::make_unique<EarlySyncSim>());
  const ContextId ctx = device.createContext();
  const BufferId buf = device.allocBuffer(ctx, 64);
  const std::vector<std::byte> bytes(64);
  device.copyToDevice(ctx, buf, bytes);
  EXPECT_EQ(errorOf([&] { device.synchronize(ctx); }),
            "the sim queue's drain returned while 1 command enqueued before it was still queued "
            "(upload)");
  device.copyToDevice(ctx, buf, bytes);
  EXPECT_EQ(errorOf([&] { device.synchronize(ctx); }),
            "the sim queue's drain returned while 2 commands enqueued before it were not "
            "complete: upload still queued, upload still queued");
  // copyToHost still drains: the work is done, and that wait passes.
  std::vector<std::byte> out(64);
  EXPECT_NO_THROW(device.copyToHost(ctx, buf, out));
  EXPECT_NO_THROW(device.synchronize(ctx));
}

TEST(WaitCheck, TheSimsOwnWaitsPass) {
  Device device(makeSimBackend());
  const ContextId ctx = device.createContext();
  const BufferId buf = device.allocBuffer(ctx, 64);
  const std::vector<std::byte> bytes(64);
  device.copyToDevice(ctx, buf, bytes);
  EXPECT_NO_THROW(device.synchronize(ctx));
  device.copyToDevice(ctx, buf, bytes);
  std::vector<std::byte> out(64);
  EXPECT_NO_THROW(device.copyToHost(ctx, buf, out));
  device.copyToDevice(ctx, buf, bytes);
  EXPECT_NO_THROW(device.destroyContext(ctx));
  device.freeBuffer(buf);
}

}  // namespace
}  // namespace gpufuzz
