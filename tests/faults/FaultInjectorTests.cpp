// FaultInjectorTests.cpp: each effect observed from outside, in a child process under a deadline:
// how the child ends, what CPU it burns, what reaches the backend.
#include "renderer/faults/FaultInjector.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tests/faults/ChildWithDeadline.h"
#include "tests/faults/FakeBackend.h"

namespace gpufuzz::test {
namespace {

using namespace std::chrono_literals;

// A device over the fake backend with one plan applied.
struct Rig {
  explicit Rig(FaultPlan plan) : injector(std::make_shared<FaultInjector>(std::move(plan))) {
    device.addInterceptor(injector);
  }
  explicit Rig(std::string_view planText) : Rig(parseFaultPlan(planText, "test.plan")) {}

  FakeBackend::Log log;
  Device device{std::make_unique<FakeBackend>(log)};
  std::shared_ptr<FaultInjector> injector;
};

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(FaultEffects, HangBlocksTheCallForeverAtNoCpu) {
  const ChildReport r = runInChild([] {
    Rig rig("hang at buf_alloc");
    const ContextId ctx = rig.device.createContext();
    rig.device.allocBuffer(ctx, 64);
    std::puts("buf_alloc returned");
    return 0;
  });
  ASSERT_TRUE(r.killedAtDeadline) << r.output;
  EXPECT_EQ(r.stateAtDeadline, 'S') << "asleep in a wait, not running";
  EXPECT_LT(r.cpuShare, 0.05);
  EXPECT_EQ(r.output, "gpufuzz: fault plan hangs buf_alloc (test.plan:1: hang at buf_alloc)\n");
}

TEST(FaultEffects, SpinBurnsCpuForever) {
  const ChildReport r = runInChild([] {
    Rig rig("spin at sync");
    rig.device.synchronize(rig.device.createContext());
    std::puts("sync returned");
    return 0;
  });
  ASSERT_TRUE(r.killedAtDeadline) << r.output;
  EXPECT_EQ(r.stateAtDeadline, 'R');
  // More than half the window, less whatever other processes on a busy machine kept it waiting.
  EXPECT_GT(r.cpuShare, 0.5 * (1 - r.waitShare)) << "wait share " << r.waitShare;
  EXPECT_EQ(r.output, "gpufuzz: fault plan spins in sync (test.plan:1: spin at sync)\n");
}

TEST(FaultEffects, CrashDiesBySegvEvenUnderAHandler) {
  const ChildReport r = runInChild([] {
    // A crash reporter must not turn the injected crash into a clean exit.
    ::signal(SIGSEGV, [](int) { ::_exit(3); });
    Rig rig("crash at ctx_destroy");
    rig.device.destroyContext(rig.device.createContext());
    std::puts("ctx_destroy returned");
    return 0;
  });
  ASSERT_TRUE(r.signaled) << r.output << " exit " << r.exitCode;
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(r.output,
            "gpufuzz: fault plan crashes ctx_destroy (test.plan:1: crash at ctx_destroy)\n");
}

TEST(FaultEffects, ErrorThrowsDeviceErrorNamingCallAndRule) {
  const ChildReport r = runInChild([] {
    Rig rig("hang at sync when calls >= 5\n\nerror at buf_free   # refused\n");
    const ContextId ctx = rig.device.createContext();
    const BufferId buf = rig.device.allocBuffer(ctx, 64);
    ChildChecks checks;
    try {
      rig.device.freeBuffer(buf);
      checks.expect(false, "buf_free returned");
    } catch (const DeviceError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      checks.expect(e.point() == CallPoint::BufFree, "the error names buf_free");
    }
    checks.expect(rig.log.freed.empty(), "the failed free never reached the backend");
    return checks.status();
  });
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output, "buf_free failed: injected fault (test.plan:3: error at buf_free)\n");
}

TEST(FaultEffects, StrictLifetimesRefusesToFreeWhatPendingWorkUses) {
  const ChildReport r = runInChild([] {
    Rig rig(loadFaultPlan("strict-lifetimes"));
    const ContextId ctx = rig.device.createContext();
    const BufferId fb = rig.device.allocBuffer(ctx, 64);
    const BufferId idle = rig.device.allocBuffer(ctx, 64);
    RasterLaunch launch;
    launch.framebuffer = fb;
    launch.vertices = fb;
    rig.device.launch(ctx, launch);
    rig.device.freeBuffer(idle);  // nothing uses it
    try {
      rig.device.freeBuffer(fb);
    } catch (const DeviceError& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
    rig.device.synchronize(ctx);
    rig.device.freeBuffer(fb);  // the launch has completed
    return 0;
  });
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output,
            "buf_free failed: injected fault (strict-lifetimes:1: error at buf_free when refs >= "
            "1)\n");
}

TEST(FaultEffects, DelaySucceedsAfterTheDelay) {
  const ChildReport r = runInChild([] {
    Rig rig("delay=300 at sync");
    const ContextId ctx = rig.device.createContext();
    const auto start = std::chrono::steady_clock::now();
    rig.device.synchronize(ctx);
    const auto took = std::chrono::steady_clock::now() - start;
    ChildChecks checks;
    checks.expect(took >= 300ms, "sync took at least 300 ms");
    checks.expect(took < 1000ms, "sync took well under the deadline");
    checks.expect(rig.log.calls.back() == "sync", "sync reached the backend");
    return checks.status();
  });
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_GE(r.elapsed, 300ms);
}

TEST(FaultEffects, CorruptAltersUploadedBytes) {
  const ChildReport r = runInChild([] {
    Rig rig("corrupt at copy_to_device");
    const ContextId ctx = rig.device.createContext();
    const BufferId buf = rig.device.allocBuffer(ctx, 4);
    const std::vector<std::byte> data = {std::byte{0x00}, std::byte{0x01}, std::byte{0x5a},
                                         std::byte{0xff}};
    rig.device.copyToDevice(ctx, buf, data);
    ChildChecks checks;
    checks.expect(rig.log.memory[buf] == std::vector<std::byte>{std::byte{0x5a}, std::byte{0x5b},
                                                                std::byte{0x00}, std::byte{0xa5}},
                  "the device received the bytes XOR 0x5a");
    checks.expect(data[1] == std::byte{0x01}, "the caller's bytes are untouched");
    return checks.status();
  });
  EXPECT_EQ(r.exitCode, 0) << r.output;
}

TEST(FaultEffects, CorruptAltersTheHostCopy) {
  const ChildReport r = runInChild([] {
    Rig rig("corrupt at copy_to_host");
    const ContextId ctx = rig.device.createContext();
    const BufferId buf = rig.device.allocBuffer(ctx, 2);
    rig.log.memory[buf] = {std::byte{0x10}, std::byte{0x5a}};
    std::vector<std::byte> host(2);
    rig.device.copyToHost(ctx, buf, host);
    ChildChecks checks;
    checks.expect(host == std::vector<std::byte>{std::byte{0x4a}, std::byte{0x00}},
                  "the host copy is XOR 0x5a");
    checks.expect(rig.log.memory[buf][0] == std::byte{0x10}, "the device's bytes are untouched");
    return checks.status();
  });
  EXPECT_EQ(r.exitCode, 0) << r.output;
}

TEST(FaultEffects, CorruptAltersALaunchsOutput) {
  const ChildReport r = runInChild([] {
    Rig rig("corrupt at launch when launches >= 1");
    const ContextId ctx = rig.device.createContext();
    RasterLaunch launch;
    launch.framebuffer = rig.device.allocBuffer(ctx, 64);
    launch.vertices = rig.device.allocBuffer(ctx, 48);
    rig.device.launch(ctx, launch);
    rig.device.launch(ctx, launch);
    ChildChecks checks;
    checks.expect(rig.log.launches.size() == 2, "both launches reached the backend");
    checks.expect(rig.log.launches.at(0).corruptXor == 0, "the first launch is left alone");
    checks.expect(rig.log.launches.at(1).corruptXor == kCorruptXor, "the second is corrupted");
    checks.expect(launch.corruptXor == 0, "the caller's launch is untouched");
    return checks.status();
  });
  EXPECT_EQ(r.exitCode, 0) << r.output;
}

TEST(FaultEffects, LeakKeepsBuffersAndContexts) {
  const ChildReport r = runInChild([] {
    Rig rig("leak at buf_free\nleak at ctx_destroy\n");
    const ContextId ctx = rig.device.createContext();
    const BufferId buf = rig.device.allocBuffer(ctx, 64);
    rig.device.freeBuffer(buf);
    rig.device.destroyContext(ctx);
    ChildChecks checks;
    checks.expect(rig.log.freed.empty(), "the backend's free was never called");
    checks.expect(rig.log.destroyed.empty(), "the backend's destroy was never called");
    checks.expect(rig.device.memoryInUse() == MemoryInUse{64, 1, 1}, "the memory is still held");
    checks.expect(!rig.device.tracker().bufferLive(buf), "the caller's free succeeded");
    checks.expect(!rig.device.tracker().contextLive(ctx), "the caller's destroy succeeded");
    return checks.status();
  });
  EXPECT_EQ(r.exitCode, 0) << r.output;
}

// The seed's own reproducer, repro.mojo, both ways round, under the runtime it hung on.
int seedReproducer(bool contextFirst) {
  Rig rig(loadFaultPlan("max-26.5.0"));
  for (int renderer = 0; renderer < 2; ++renderer) {
    const ContextId ctx = rig.device.createContext();
    const BufferId buf = rig.device.allocBuffer(ctx, 256);
    if (contextFirst) {
      rig.device.destroyContext(ctx);
      rig.device.freeBuffer(buf);
    } else {
      rig.device.freeBuffer(buf);
      rig.device.destroyContext(ctx);
    }
  }
  return 0;
}

TEST(FaultEffects, Max2650HangsTheSeedContextFirstOnly) {
  const ChildReport buffersFirst = runInChild([] { return seedReproducer(false); });
  EXPECT_TRUE(buffersFirst.exited);
  EXPECT_EQ(buffersFirst.exitCode, 0) << buffersFirst.output;

  const ChildReport contextFirst = runInChild([] { return seedReproducer(true); });
  ASSERT_TRUE(contextFirst.killedAtDeadline) << contextFirst.output;
  EXPECT_LT(contextFirst.cpuShare, 0.05);
  EXPECT_TRUE(contains(contextFirst.output,
                       "hangs buf_alloc (max-26.5.0:2: hang at buf_alloc when first_in_ctx and "
                       "ctx_destroyed_with_live_buffers >= 1)"))
      << contextFirst.output;
}

TEST(FaultEffects, ObserverHearsOfAFaultThatNeverReturns) {
  const ChildReport r = runInChild([] {
    Rig rig("hang at ctx_create when ctx_index >= 1");
    rig.injector->setFiredObserver(
        [](const FaultRule& rule, const CallSite& site, const CounterSnapshot& counters) {
          std::printf("fired line %d at %s, ctx_index %llu\n", rule.line,
                      std::string(callPointName(site.point)).c_str(),
                      static_cast<unsigned long long>(counters[Counter::CtxIndex]));
          std::fflush(stdout);
        });
    rig.device.createContext();
    rig.device.createContext();
    return 0;
  });
  ASSERT_TRUE(r.killedAtDeadline) << r.output;
  EXPECT_TRUE(contains(r.output, "fired line 1 at ctx_create, ctx_index 1\n")) << r.output;
}

}  // namespace
}  // namespace gpufuzz::test
