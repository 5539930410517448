// ReferenceModel.h: the reference state model. It tracks what is alive (renderers, bare contexts,
// bare buffers), answers the preconditions of each operation, and computes the image every
// renderer's framebuffer must hold, with the same integer raster math the kernels use.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/Operation.h"

namespace gpufuzz {

class ReferenceModel {
 public:
  struct Renderer {
    uint32_t width = 0, height = 0;
    // The current texture set; a new renderer has none (count 0) until set_textures.
    uint32_t textureCount = 0, textureSize = 0, textureSeed = 0;
    /// width * height RGBA8 pixels, row-major, as of the draws before `pending`. Images are
    /// computed when asked for (expectedImage), so generating and checking sequences whose
    /// draws are never read back costs no rendering.
    mutable std::vector<uint32_t> image;
    struct PendingDraw {
      uint32_t triangles, seed, textureCount, textureSize, textureSeed;
    };
    mutable std::vector<PendingDraw> pending;
  };
  using NameKind = gpufuzz::NameKind;

  /// Why an operation may not run now: a reason, and which of its names it concerns.
  struct Verdict {
    std::string reason;  // empty when the operation may run
    int nameIndex = -1;  // index into Operation::names, or -1 (wrong arity, bad argument)
    bool ok() const { return reason.empty(); }
  };
  /// Checks the operation's form (name count and syntax, argument bounds) and its names against
  /// the state: used names must be alive and of the kind the operation needs; introduced names
  /// must never have been used.
  Verdict check(const Operation& op) const;
  /// Why `op` may not run now, or empty when it may.
  std::string precondition(const Operation& op) const { return check(op).reason; }
  /// Applies `op`'s effect on the model's state. Throws std::invalid_argument, changing nothing,
  /// when `op` does not satisfy its precondition: a caller that skipped the check has a bug.
  void apply(const Operation& op);

  /// The image `read_back R` must return now (drawn on first request). Throws std::out_of_range
  /// if R is not alive.
  const std::vector<uint32_t>& expectedImage(const std::string& renderer) const;

  const std::map<std::string, Renderer>& renderers() const { return renderers_; }
  /// Live bare contexts, and live bare buffers with their context's name.
  const std::set<std::string>& contexts() const { return contexts_; }
  const std::map<std::string, std::string>& buffers() const { return buffers_; }
  /// Every name ever introduced, alive or not.
  bool nameUsed(const std::string& name) const;
  /// What a used name denotes, alive or not; nullopt for a name never used.
  std::optional<NameKind> nameKind(const std::string& name) const;

 private:
  std::map<std::string, Renderer> renderers_;
  std::set<std::string> contexts_;
  std::map<std::string, std::string> buffers_;
  std::map<std::string, NameKind> used_;
};

/// Applies one draw to an image with the textures of a set made by `set_textures`.
void drawInto(std::vector<uint32_t>& image, uint32_t width, uint32_t height, uint32_t triangles,
              uint32_t seed, uint32_t textureCount, uint32_t textureSize, uint32_t textureSeed);

}  // namespace gpufuzz
