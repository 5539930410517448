// GpuRenderer.h: the system under test, a small renderer in the shape of the seed's: a device
// context with one queue, a W x H RGBA8 framebuffer, a vertex buffer, and a replaceable set of
// textures. It knows the device seam only, never the harness.
//
// Release order is explicit (release()), never an accident of member declaration order: C++
// destroys members in reverse order, Mojo in declaration order, and the seed's hang came from
// exactly that. Under `shipped` the teardown waits for the queue, frees every buffer, and then
// destroys the context.
#pragma once

#include <cstdint>
#include <vector>

#include "renderer/TeardownPolicy.h"
#include "renderer/device/Device.h"

namespace gpufuzz {

class GpuRenderer {
 public:
  /// Creates the context and the framebuffer and vertex buffer, clears the framebuffer, and
  /// waits for that upload, so a new renderer has no queued work. A failure releases what was
  /// made before it is thrown.
  GpuRenderer(Device& device, uint32_t width, uint32_t height, TeardownPolicy policy);
  /// Runs release() if it was not called; a failure there is reported on stderr, never thrown.
  ~GpuRenderer();
  GpuRenderer(const GpuRenderer&) = delete;
  GpuRenderer& operator=(const GpuRenderer&) = delete;

  /// Enqueues `triangles` pseudo-random triangles made from `seed`; does not wait.
  void draw(uint32_t triangles, uint32_t seed);
  void sync();
  /// Replaces the textures with `count` textures of size x size texels made from `seed`. On a
  /// failure the old set stays: the new one is made first.
  void setTextures(uint32_t count, uint32_t size, uint32_t seed);
  /// Copies the framebuffer to the host (waiting for the queued work first).
  std::vector<uint32_t> readBack();
  /// The teardown, under the renderer's policy. Throws DeviceError; runs at most once, and a
  /// failed wait before it still releases everything.
  void release();
  /// Forgets every resource without a device call. After a device failure further calls could
  /// block forever (a hung runtime does not come back), so the failure is reported instead.
  void abandon() { released_ = true; }

  uint32_t width() const { return width_; }
  uint32_t height() const { return height_; }

 private:
  void freeBuffers();
  /// The context and every buffer, in the policy's order.
  void releaseInOrder();
  /// After a failed call: waits once more, then releases what was made, its own failures only
  /// reported, since the first failure is the one that counts.
  void releaseAfterFailure();
  /// Waits for the queue; whether the wait succeeded. For cleanup after a failure only.
  bool waitQuietly();

  Device& device_;
  const Defenses defenses_;
  const uint32_t width_;
  const uint32_t height_;
  ContextId context_ = 0;
  BufferId framebuffer_ = 0;
  BufferId vertices_ = 0;
  std::vector<BufferId> textures_;
  uint32_t textureSize_ = 0;
  bool released_ = false;
};

}  // namespace gpufuzz
