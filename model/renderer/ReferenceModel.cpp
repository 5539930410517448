// ReferenceModel.cpp: the renderer model's expected images, beside the lifecycle state.
#include "model/renderer/ReferenceModel.h"

#include <map>
#include <mutex>
#include <stdexcept>

#include "renderer/Raster.h"

namespace gpufuzz {

namespace {

bool sameDeclaration(const LifecycleModel& a, const OpDecl& x, const LifecycleModel& b,
                     const OpDecl& y) {
  if (x.slots.size() != y.slots.size() || x.args.size() != y.args.size()) return false;
  for (std::size_t i = 0; i < x.slots.size(); ++i) {
    if (x.slots[i].use != y.slots[i].use ||
        a.resources[x.slots[i].kind].kind != b.resources[y.slots[i].kind].kind) {
      return false;
    }
  }
  for (std::size_t i = 0; i < x.args.size(); ++i) {
    const ArgDecl &p = x.args[i], &q = y.args[i];
    if (p.key != q.key || p.min != q.min || p.max != q.max || p.words != q.words) return false;
  }
  return true;
}

}  // namespace

RendererOp rendererOp(const Operation& op) {
  static constexpr std::string_view kNames[] = {
      "create",  "draw",       "sync",       "set_textures", "read_back",
      "destroy", "ctx_create", "buf_create", "buf_destroy",  "ctx_destroy"};
  for (std::size_t i = 0; i < std::size(kNames); ++i) {
    if (op.name() == kNames[i]) return static_cast<RendererOp>(i);
  }
  return RendererOp::Other;
}

bool hasRendererSemantics(const LifecycleModel& model) {
  static const LifecycleModel& all = builtinModel("all");
  if (&model == &all) return true;
  // Models are few and live for the process: each is compared with `all` once.
  static std::mutex mutex;
  static std::map<const LifecycleModel*, bool> known;
  std::lock_guard lock(mutex);
  if (const auto it = known.find(&model); it != known.end()) return it->second;
  bool same = true;
  for (const OpDecl& op : model.ops) {
    const OpDecl* own = all.op(op.name);
    same = same && own && sameDeclaration(model, op, all, *own);
  }
  known.emplace(&model, same);
  return same;
}

ReferenceModel::ReferenceModel() : ReferenceModel(builtinModel("all")) {}

ReferenceModel::ReferenceModel(const LifecycleModel& model) : state_(model) {}

void ReferenceModel::apply(const Operation& op) {
  state_.apply(op);
  const std::string_view kind = op.name();
  const auto u32 = [&](std::string_view key) { return static_cast<uint32_t>(op.arg(key)); };
  if (kind == "create") {
    const uint32_t w = u32("width"), h = u32("height");
    renderers_[op.names.front()] = {w, h, 0, 0, 0, std::vector<uint32_t>(size_t{w} * h, 0), {}};
  } else if (kind == "draw") {
    Renderer& r = renderers_.at(op.names.front());
    r.pending.push_back(
        {u32("triangles"), u32("seed"), r.textureCount, r.textureSize, r.textureSeed});
  } else if (kind == "set_textures") {
    Renderer& r = renderers_.at(op.names.front());
    r.textureCount = u32("count");
    r.textureSize = u32("size");
    r.textureSeed = u32("seed");
  } else if (kind == "destroy") {
    renderers_.erase(op.names.front());
  }
}

std::set<std::string> ReferenceModel::alive(std::string_view kind) const {
  std::set<std::string> out;
  const std::optional<std::size_t> k = state_.model().kind(kind);
  if (!k) return out;
  for (const std::size_t i : state_.alive(*k))
    out.insert(state_.names()[i].name);
  return out;
}

std::map<std::string, std::string> ReferenceModel::buffers() const {
  std::map<std::string, std::string> out;
  const std::optional<std::size_t> k = state_.model().kind("buffer");
  if (!k) return out;
  for (const std::size_t i : state_.alive(*k)) {
    const ModelState::Name& n = state_.names()[i];
    out[n.name] = n.owner ? state_.names()[*n.owner].name : std::string();
  }
  return out;
}

std::optional<std::string> ReferenceModel::nameKind(const std::string& name) const {
  const ModelState::Name* n = state_.find(name);
  if (!n) return std::nullopt;
  return state_.model().resources[n->kind].kind;
}

const std::vector<uint32_t>& ReferenceModel::expectedImage(const std::string& renderer) const {
  const Renderer& r = renderers_.at(renderer);
  for (const Renderer::PendingDraw& d : r.pending) {
    drawInto(r.image, r.width, r.height, d.triangles, d.seed, d.textureCount, d.textureSize,
             d.textureSeed);
  }
  r.pending.clear();
  return r.image;
}

void drawInto(std::vector<uint32_t>& image, uint32_t width, uint32_t height, uint32_t triangles,
              uint32_t seed, uint32_t textureCount, uint32_t textureSize, uint32_t textureSeed) {
  if (image.size() != size_t{width} * height) {
    throw std::invalid_argument("drawInto: image size does not match width x height");
  }
  if (textureCount > 0 && textureSize == 0) {
    throw std::invalid_argument("drawInto: textures of size 0");
  }
  std::vector<raster::Triangle> tris(triangles);
  for (uint32_t i = 0; i < triangles; ++i) {
    tris[i] = raster::makeTriangle(seed, i, width, height);
  }
  // Texels are computed where the kernel would read them from uploaded textures: the same
  // texel() values, so the images agree bit for bit without materializing the textures.
  const auto sample = [textureSeed](uint32_t texture, uint32_t x, uint32_t y) {
    return raster::texel(textureSeed, texture, x, y);
  };
  raster::rasterizeHost(image.data(), width, height, tris.data(), triangles, textureCount,
                        textureSize, sample);
}

}  // namespace gpufuzz
