// RendererGpuTests.cpp: GpuRenderer on a real CUDA device, against the sim backend and the model.
// Images must be bit-exact on cuda, on sim and in the reference model; each teardown policy must
// show what the driver really does with it. Without a usable CUDA device every test fails: a GPU
// run that skipped would look like a pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "model/ReferenceModel.h"
#include "renderer/Backends.h"
#include "renderer/GpuRenderer.h"
#include "renderer/Raster.h"
#include "renderer/TeardownPolicy.h"
#include "renderer/device/Device.h"
#include "renderer/device/DeviceError.h"
#include "tests/gpu/DriverMemory.h"

namespace gpufuzz {
namespace {

/// splitmix64: the scenario list must be the same on every machine and every run, which the
/// standard distributions do not promise.
class ScenarioStream {
 public:
  explicit ScenarioStream(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint32_t below(uint32_t bound) { return static_cast<uint32_t>(next() % bound); }
  uint32_t word() { return static_cast<uint32_t>(next() >> 32); }
  template <typename T>
  T pick(const std::vector<T>& choices) {
    return choices[below(static_cast<uint32_t>(choices.size()))];
  }

 private:
  uint64_t state_;
};

/// The first differing pixel and how many differ, or empty when the images agree.
std::string imageDifference(const std::vector<uint32_t>& got, const std::vector<uint32_t>& want,
                            uint32_t width) {
  if (got.size() != want.size()) {
    return std::to_string(got.size()) + " pixels, expected " + std::to_string(want.size());
  }
  size_t wrong = 0;
  size_t first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (wrong++ == 0) first = i;
  }
  if (wrong == 0) return {};
  char text[96];
  std::snprintf(text, sizeof text, "pixel (%zu, %zu) is 0x%08x, expected 0x%08x", first % width,
                first / width, got[first], want[first]);
  return std::string(text) + " (" + std::to_string(wrong) + " of " + std::to_string(got.size()) +
         " pixels differ)";
}

std::unique_ptr<Device> makeDevice(std::string_view backend) {
  return std::make_unique<Device>(makeBackend(backend));
}

/// Records the counters every call saw, to show which risky path a policy really took.
class CallLog final : public Interceptor {
 public:
  struct Call {
    CallPoint point;
    CounterSnapshot counters;
  };
  Alteration before(const CallSite& site, const CounterSnapshot& counters) override {
    calls.push_back({site.point, counters});
    return {};
  }
  /// The largest value `counter` had at any call at `point`.
  uint64_t most(CallPoint point, Counter counter) const {
    uint64_t m = 0;
    for (const Call& c : calls) {
      if (c.point == point && c.counters[counter] > m) m = c.counters[counter];
    }
    return m;
  }
  std::vector<Call> calls;
};

class RendererGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      cuda_ = makeDevice("cuda");
    } catch (const DeviceUnavailable& e) {
      FAIL() << "these tests need a usable CUDA device: " << e.what();
    }
  }

  std::unique_ptr<Device> cuda_;
};

/// A renderer on the cuda device, one on the sim device and the model's image, driven by the
/// same calls. Every step is also kept as a .seq line, so a mismatch replays with gpufuzz-runner.
class RendererTwins {
 public:
  RendererTwins(Device& cuda, Device& sim, std::string name, uint32_t width, uint32_t height)
      : name_(std::move(name)),
        cuda_(cuda, width, height, TeardownPolicy::Shipped),
        sim_(sim, width, height, TeardownPolicy::Shipped),
        image_(size_t{width} * height, 0U) {
    log("create " + name_ + " width=" + std::to_string(width) +
        " height=" + std::to_string(height));
  }

  void draw(uint32_t triangles, uint32_t seed) {
    cuda_.draw(triangles, seed);
    sim_.draw(triangles, seed);
    drawInto(image_, cuda_.width(), cuda_.height(), triangles, seed, textureCount_, textureSize_,
             textureSeed_);
    ++draws_;
    log("draw " + name_ + " triangles=" + std::to_string(triangles) +
        " seed=" + std::to_string(seed));
  }

  void setTextures(uint32_t count, uint32_t size, uint32_t seed) {
    cuda_.setTextures(count, size, seed);
    sim_.setTextures(count, size, seed);
    textureCount_ = count;
    textureSize_ = size;
    textureSeed_ = seed;
    log("set_textures " + name_ + " count=" + std::to_string(count) +
        " size=" + std::to_string(size) + " seed=" + std::to_string(seed));
  }

  void sync() {
    cuda_.sync();
    sim_.sync();
    log("sync " + name_);
  }

  /// Both read-backs against the model; stops at the first disagreement, since every later
  /// image would differ too.
  void expectImages() {
    log("read_back " + name_);
    if (failed_) return;
    const std::string onCuda = imageDifference(cuda_.readBack(), image_, cuda_.width());
    const std::string onSim = imageDifference(sim_.readBack(), image_, cuda_.width());
    if (onCuda.empty() && onSim.empty()) {
      ++readBacks_;
      return;
    }
    failed_ = true;
    ADD_FAILURE() << name_ << " (" << cuda_.width() << "x" << cuda_.height() << ") after " << draws_
                  << " draws:\n  cuda vs model: " << (onCuda.empty() ? "same" : onCuda)
                  << "\n  sim vs model:  " << (onSim.empty() ? "same" : onSim)
                  << "\nreplay (--backend cuda or sim, --faults none):\n"
                  << steps_;
  }

  void release() {
    cuda_.release();
    sim_.release();
  }

  uint32_t draws() const { return draws_; }
  uint32_t readBacks() const { return readBacks_; }

 private:
  void log(const std::string& line) { steps_ += line + "\n"; }

  std::string name_;
  GpuRenderer cuda_;
  GpuRenderer sim_;
  std::vector<uint32_t> image_;
  uint32_t textureCount_ = 0;
  uint32_t textureSize_ = 0;
  uint32_t textureSeed_ = 0;
  uint32_t draws_ = 0;
  uint32_t readBacks_ = 0;
  bool failed_ = false;
  std::string steps_;
};

struct Scenario {
  uint32_t width;
  uint32_t height;
  /// Draws to make besides the two of 1 and kMaxTriangles triangles every scenario gets.
  uint32_t draws;
  /// The model and the sim shade on the CPU at ~7 ns a pixel and triangle each: large
  /// framebuffers get fewer and smaller draws so the file stays within its time.
  uint32_t maxTriangles;
};

TEST_F(RendererGpuTest, ImagesMatchTheSimBackendAndTheModel) {
  const std::unique_ptr<Device> sim = makeDevice("sim");
  const std::vector<Scenario> scenarios = {
      {1, 1, 30, 1024},   {37, 23, 46, 1024}, {16, 16, 30, 1024},
      {17, 15, 30, 1024}, {3, 257, 30, 1024}, {255, 1, 30, 1024},
      {64, 64, 40, 512},  {100, 37, 36, 512}, {512, 384, 6, 128},
  };
  ScenarioStream stream(0x6770755f72656e64ULL);

  // All renderers stay alive together and their steps interleave, so the backend keeps switching
  // between live contexts as a real program would.
  std::vector<std::unique_ptr<RendererTwins>> twins;
  std::vector<uint32_t> drawsLeft;
  std::vector<uint32_t> fullDrawAt;
  std::vector<uint32_t> singleDrawAt;
  for (size_t i = 0; i < scenarios.size(); ++i) {
    const Scenario& s = scenarios[i];
    twins.push_back(
        std::make_unique<RendererTwins>(*cuda_, *sim, "r" + std::to_string(i), s.width, s.height));
    drawsLeft.push_back(s.draws + 2);
    fullDrawAt.push_back(stream.below(s.draws + 2));
    singleDrawAt.push_back(stream.below(s.draws + 2));
  }
  const std::vector<uint32_t> textureCounts = {0, 1, 5, 16};
  const std::vector<uint32_t> textureSizes = {1, 7, 64};

  uint32_t replacements = 0;
  for (;;) {
    std::vector<size_t> busy;
    for (size_t i = 0; i < twins.size(); ++i) {
      if (drawsLeft[i] > 0) busy.push_back(i);
    }
    if (busy.empty()) break;
    const size_t i = stream.pick(busy);
    RendererTwins& r = *twins[i];
    const uint32_t roll = stream.below(100);
    if (roll < 15) {
      // Replaces the textures that queued draws may still sample.
      r.setTextures(stream.pick(textureCounts), stream.pick(textureSizes), stream.word());
      ++replacements;
    } else if (roll < 27) {
      r.expectImages();
    } else if (roll < 31) {
      r.sync();
    } else {
      const uint32_t made = scenarios[i].draws + 2 - drawsLeft[i];
      uint32_t triangles = 0;
      if (made == fullDrawAt[i]) {
        triangles = raster::kMaxTriangles;
      } else if (made == singleDrawAt[i]) {
        triangles = 1;
      } else {
        // Mostly few triangles, sometimes many: both ends of the kernel's loop.
        const uint32_t cap = scenarios[i].maxTriangles;
        triangles = stream.below(3) == 0 ? 1 + stream.below(cap) : 1 + stream.below(16);
      }
      r.draw(triangles, stream.word());
      --drawsLeft[i];
    }
  }

  uint32_t draws = 0;
  uint32_t readBacks = 0;
  for (const auto& r : twins) {
    r->expectImages();
    draws += r->draws();
    readBacks += r->readBacks();
    r->release();
  }
  std::cout << "[ images   ] " << draws << " draws and " << replacements
            << " texture replacements over " << twins.size() << " renderers; " << readBacks
            << " read-backs agreed on cuda, sim and the model\n";
  EXPECT_EQ(cuda_->memoryInUse(), MemoryInUse{});
  EXPECT_EQ(sim->memoryInUse(), MemoryInUse{});
}

/// Draws into a new renderer and expects the model's image: the device still works.
void expectAWorkingRenderer(Device& device, TeardownPolicy policy) {
  GpuRenderer next(device, 37, 23, policy);
  next.setTextures(5, 64, 17);
  next.draw(300, 18);
  next.draw(2, 19);
  std::vector<uint32_t> want(37 * 23, 0U);
  drawInto(want, 37, 23, 300, 18, 5, 64, 17);
  drawInto(want, 37, 23, 2, 19, 5, 64, 17);
  EXPECT_EQ(imageDifference(next.readBack(), want, 37), "") << "the renderer after the first";
  next.release();
}

/// Textures replaced while a draw that samples them is queued, a read-back, and a large draw
/// left queued at release: the paths no-texture-wait and no-destroy-sync take without waiting.
void driveToRelease(GpuRenderer& r) {
  r.setTextures(5, 7, 11);
  r.draw(300, 1);
  r.setTextures(16, 64, 12);
  r.draw(1024, 2);
  std::vector<uint32_t> want(size_t{r.width()} * r.height(), 0U);
  drawInto(want, r.width(), r.height(), 300, 1, 5, 7, 11);
  drawInto(want, r.width(), r.height(), 1024, 2, 16, 64, 12);
  EXPECT_EQ(imageDifference(r.readBack(), want, r.width()), "");
  r.draw(1024, 3);
}

// The device's own account (cuMemGetInfo), not the backend's: renderers created, drawn,
// retextured and released by the shipped policy give every byte back to the driver.
TEST_F(RendererGpuTest, ShippedTeardownLeaksNothingByTheDriversCount) {
  const testing::DriverMemory memory;
  const auto freeBytes = [&] { return memory.freeBytes(); };
  constexpr int64_t kMiB = int64_t{1} << 20;
  // A warm-up cycle: the driver keeps some per-process state after the first context.
  { GpuRenderer warm(*cuda_, 64, 64, TeardownPolicy::Shipped); }
  const int64_t before = freeBytes();
  int64_t lowest = before;
  for (uint32_t cycle = 0; cycle < 12; ++cycle) {
    GpuRenderer r(*cuda_, 1024, 1024, TeardownPolicy::Shipped);
    r.setTextures(16, 1024, cycle);  // 64 MiB of textures
    r.draw(256, cycle);
    r.setTextures(8, 512, cycle + 100);
    r.draw(128, cycle);
    if (cycle % 3 == 0) r.readBack();
    lowest = std::min(lowest, freeBytes());
    r.release();
  }
  const int64_t after = freeBytes();
  std::cout << "[ driver   ] free " << before / kMiB << " MiB before, " << lowest / kMiB
            << " MiB at the lowest, " << after / kMiB << " MiB after 12 renderers\n";
  EXPECT_GE(before - lowest, 32 * kMiB) << "the check would not see a renderer's memory";
  EXPECT_LE(before - after, 2 * kMiB) << "memory the shipped teardown did not give back";
  EXPECT_EQ(cuda_->memoryInUse(), MemoryInUse{});
}

TEST_F(RendererGpuTest, PoliciesThatKeepBuffersBeforeContextReleaseCleanly) {
  for (TeardownPolicy policy :
       {TeardownPolicy::Shipped, TeardownPolicy::NoTextureWait, TeardownPolicy::NoDestroySync}) {
    SCOPED_TRACE(std::string(policyName(policy)));
    const auto log = std::make_shared<CallLog>();
    cuda_->addInterceptor(log);
    {
      GpuRenderer r(*cuda_, 192, 128, policy);
      driveToRelease(r);
      EXPECT_NO_THROW(r.release());
    }
    EXPECT_EQ(cuda_->memoryInUse(), MemoryInUse{});

    // The policy really took its shortcut on the driver, and the driver tolerated it. A buffer
    // is freed under a queued draw when textures are replaced without a wait, and when the
    // teardown frees without one.
    const Defenses d = defensesOf(policy);
    EXPECT_EQ(log->most(CallPoint::BufFree, Counter::Refs) > 0,
              !d.textureReplaceWaits || !d.destroyWaits)
        << "a buffer freed while a queued draw referenced it";
    EXPECT_EQ(log->most(CallPoint::CtxDestroy, Counter::Pending) > 0, !d.destroyWaits)
        << "the context destroyed with work queued";
    EXPECT_EQ(log->most(CallPoint::CtxDestroy, Counter::CtxBuffers), 0U)
        << "every buffer freed before the context";

    expectAWorkingRenderer(*cuda_, policy);
    EXPECT_EQ(cuda_->memoryInUse(), MemoryInUse{});
  }
}

TEST_F(RendererGpuTest, ContextFirstReleaseFailsInCuMemFreeAndTheNextRendererWorks) {
  GpuRenderer r(*cuda_, 64, 64, TeardownPolicy::ContextFirst);
  driveToRelease(r);
  try {
    r.release();
    ADD_FAILURE() << "release() under context-first succeeded; the driver freed the buffers with "
                     "their context, so freeing them afterwards must fail";
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.point(), CallPoint::BufFree) << e.what();
    EXPECT_EQ(std::string_view(e.what()).rfind("cuMemFree", 0), 0U) << e.what();
    std::cout << "[ driver   ] context-first release: " << e.what() << "\n";
  }
  // The first failed free ends the teardown: the context is gone, and the other 17 of its 18
  // buffers (16 textures, vertices, framebuffer) still owe their frees, as a leak check sees.
  EXPECT_EQ(cuda_->memoryInUse().contexts, 0U);
  EXPECT_EQ(cuda_->memoryInUse().buffers, 17U);
  const MemoryInUse owed = cuda_->memoryInUse();

  // Native Linux does not reproduce the seed's hang: the next context allocates and draws.
  expectAWorkingRenderer(*cuda_, TeardownPolicy::Shipped);
  EXPECT_EQ(cuda_->memoryInUse(), owed);
}

TEST_F(RendererGpuTest, ContextFirstDestructorReportsTheFailureInsteadOfThrowing) {
  ::testing::internal::CaptureStderr();
  {
    GpuRenderer r(*cuda_, 8, 8, TeardownPolicy::ContextFirst);
    r.draw(4, 1);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("gpufuzz: renderer teardown failed: cuMemFree"), std::string::npos) << err;
  expectAWorkingRenderer(*cuda_, TeardownPolicy::Shipped);
}

}  // namespace
}  // namespace gpufuzz
