// ReferenceModel.h: the renderer's reference semantics, added to the lifecycle model's state.
// Liveness, kinds and flags come from the sequence's model (ModelState); this adds what the
// renderer model means beyond them: the image every renderer's framebuffer must hold, computed
// with the same integer raster math the kernels use. It reads the renderer operations of the
// built-in models (create, draw, set_textures, destroy) by name: it is their executor's
// semantics, and other models' operations change only the lifecycle state.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/ModelState.h"

namespace gpufuzz {

/// The operations of the built-in models, which the renderer's semantics (images, lifecycle
/// facts) and the project's runner give a meaning: the one place their names are read.
enum class RendererOp : uint8_t {
  Create,
  Draw,
  Sync,
  SetTextures,
  ReadBack,
  Destroy,
  CtxCreate,
  BufCreate,
  BufDestroy,
  CtxDestroy,
  Other,  // an operation of another model
};
RendererOp rendererOp(const Operation& op);
/// Whether every operation of `model` is one of the built-in `all`, declared alike: the models
/// the project's runner executes and the renderer's semantics describe.
bool hasRendererSemantics(const LifecycleModel& model);

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
  using Verdict = ModelState::Verdict;

  /// The state of the built-in model `all`.
  ReferenceModel();
  explicit ReferenceModel(const LifecycleModel& model);

  Verdict check(const Operation& op) const { return state_.check(op); }
  /// Why `op` may not run now, or empty when it may.
  std::string precondition(const Operation& op) const { return check(op).reason; }
  /// Applies `op`'s effect. Throws std::invalid_argument, changing nothing, when `op` does not
  /// satisfy its precondition: a caller that skipped the check has a bug.
  void apply(const Operation& op);

  /// The image `read_back R` must return now (drawn on first request). Throws std::out_of_range
  /// if R is not alive.
  const std::vector<uint32_t>& expectedImage(const std::string& renderer) const;

  const std::map<std::string, Renderer>& renderers() const { return renderers_; }
  /// Live names of `kind` ("context"), in name order; empty for a kind the model lacks.
  std::set<std::string> alive(std::string_view kind) const;
  /// Live bare contexts, and live bare buffers with their context's name.
  std::set<std::string> contexts() const { return alive("context"); }
  std::map<std::string, std::string> buffers() const;
  /// Every name ever introduced, alive or not.
  bool nameUsed(const std::string& name) const { return state_.find(name) != nullptr; }
  /// The kind a used name denotes ("renderer"), alive or not; nullopt for a name never used.
  std::optional<std::string> nameKind(const std::string& name) const;
  const ModelState& state() const { return state_; }

 private:
  ModelState state_;
  std::map<std::string, Renderer> renderers_;
};

/// Applies one draw to an image with the textures of a set made by `set_textures`.
void drawInto(std::vector<uint32_t>& image, uint32_t width, uint32_t height, uint32_t triangles,
              uint32_t seed, uint32_t textureCount, uint32_t textureSize, uint32_t textureSeed);

}  // namespace gpufuzz
