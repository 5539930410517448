// ImageAgreement.h: images on a real backend against the sim backend and the reference model,
// for every backend's suite: the same scenarios (sizes, triangle counts, texture sets, renderers
// interleaved), bit-exact or a failure that prints the steps to replay.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "model/SplitMix.h"
#include "model/renderer/ReferenceModel.h"
#include "renderer/GpuRenderer.h"
#include "renderer/Raster.h"
#include "renderer/TeardownPolicy.h"
#include "renderer/device/Device.h"
#include "renderer/sim/SimBackend.h"

namespace gpufuzz::testing {

/// SplitMix64 (model/SplitMix.h): the scenario list must be the same on every machine and every
/// run, which the standard distributions do not promise.
class ScenarioStream {
 public:
  explicit ScenarioStream(uint64_t seed) : state_(seed) {}
  uint64_t next() { return splitmixNext(state_); }
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
inline std::string imageDifference(const std::vector<uint32_t>& got,
                                   const std::vector<uint32_t>& want, uint32_t width) {
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

/// A renderer on a real device, one on the sim device and the model's image, driven by the
/// same calls. Every step is also kept as a .seq line, so a mismatch replays with gpufuzz-runner.
class RendererTwins {
 public:
  RendererTwins(Device& real, Device& sim, std::string name, uint32_t width, uint32_t height)
      : name_(std::move(name)),
        backendName_(real.backendName()),
        real_(real, width, height, TeardownPolicy::Shipped),
        sim_(sim, width, height, TeardownPolicy::Shipped),
        image_(size_t{width} * height, 0U) {
    log("create " + name_ + " width=" + std::to_string(width) +
        " height=" + std::to_string(height));
  }

  void draw(uint32_t triangles, uint32_t seed) {
    real_.draw(triangles, seed);
    sim_.draw(triangles, seed);
    drawInto(image_, real_.width(), real_.height(), triangles, seed, textureCount_, textureSize_,
             textureSeed_);
    ++draws_;
    log("draw " + name_ + " triangles=" + std::to_string(triangles) +
        " seed=" + std::to_string(seed));
  }

  void setTextures(uint32_t count, uint32_t size, uint32_t seed) {
    real_.setTextures(count, size, seed);
    sim_.setTextures(count, size, seed);
    textureCount_ = count;
    textureSize_ = size;
    textureSeed_ = seed;
    log("set_textures " + name_ + " count=" + std::to_string(count) +
        " size=" + std::to_string(size) + " seed=" + std::to_string(seed));
  }

  void sync() {
    real_.sync();
    sim_.sync();
    log("sync " + name_);
  }

  /// Both read-backs against the model; stops at the first disagreement, since every later
  /// image would differ too.
  void expectImages() {
    log("read_back " + name_);
    if (failed_) return;
    const std::string onReal = imageDifference(real_.readBack(), image_, real_.width());
    const std::string onSim = imageDifference(sim_.readBack(), image_, real_.width());
    if (onReal.empty() && onSim.empty()) {
      ++readBacks_;
      return;
    }
    failed_ = true;
    ADD_FAILURE() << name_ << " (" << real_.width() << "x" << real_.height() << ") after " << draws_
                  << " draws:\n  " << backendName_
                  << " vs model: " << (onReal.empty() ? "same" : onReal)
                  << "\n  sim vs model:  " << (onSim.empty() ? "same" : onSim)
                  << "\nreplay (--backend " << backendName_ << " or sim, --faults none):\n"
                  << steps_;
  }

  void release() {
    real_.release();
    sim_.release();
  }

  uint32_t draws() const { return draws_; }
  uint32_t readBacks() const { return readBacks_; }

 private:
  void log(const std::string& line) { steps_ += line + "\n"; }

  std::string name_;
  std::string backendName_;
  GpuRenderer real_;
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

/// Many renderers of many shapes on `real`, drawn with many triangle counts and texture sets,
/// interleaved; every read-back must equal the sim's and the model's image. Leaves nothing
/// allocated on either device.
inline void expectImagesAgreeWithSimAndModel(Device& real) {
  Device sim(makeSimBackend());
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
        std::make_unique<RendererTwins>(real, sim, "r" + std::to_string(i), s.width, s.height));
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
            << " read-backs agreed on " << real.backendName() << ", sim and the model\n";
  EXPECT_EQ(real.memoryInUse(), MemoryInUse{});
  EXPECT_EQ(sim.memoryInUse(), MemoryInUse{});
}

}  // namespace gpufuzz::testing
