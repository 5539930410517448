// ReferenceModel.cpp: preconditions, next state and expected images of lifecycle operations.
#include "model/ReferenceModel.h"

#include <stdexcept>

#include "renderer/Raster.h"

namespace gpufuzz {

ReferenceModel::Verdict ReferenceModel::check(const Operation& op) const {
  const OpForm& form = opForm(op.kind);
  if (op.names.size() != form.names.size()) {
    return {std::string(form.name) + " takes " + std::to_string(form.names.size()) +
            (form.names.size() == 1 ? " name" : " names") + ", got " +
            std::to_string(op.names.size()) + ": " + form.usage()};
  }
  for (size_t i = 0; i < op.names.size(); ++i) {
    if (std::string why = nameError(op.names[i]); !why.empty()) {
      return {why, static_cast<int>(i)};
    }
  }
  for (const ArgSpec& a : form.args) {
    if (const uint64_t v = a.get(op); v < a.min || v > a.max) {
      return {std::string(a.key) + "=" + std::to_string(v) +
              " is out of bounds: " + std::string(a.key) + " takes " + std::to_string(a.min) +
              ".." + std::to_string(a.max)};
    }
  }
  for (size_t i = 0; i < op.names.size(); ++i) {
    const NameSlot& slot = form.names[i];
    const std::string& name = op.names[i];
    const int index = static_cast<int>(i);
    const std::optional<NameKind> kind = nameKind(name);
    if (slot.introduces) {
      if (kind) {
        return {"name " + name + " was already used: a name is introduced once, never reused",
                index};
      }
      continue;
    }
    if (!kind) return {name + " is not alive: nothing created it", index};
    if (*kind != slot.kind) {
      return {name + " is a " + std::string(nameKindName(*kind)) + ", " + std::string(form.name) +
                  " needs a " + std::string(nameKindName(slot.kind)),
              index};
    }
    const bool alive = slot.kind == NameKind::Renderer  ? renderers_.contains(name)
                       : slot.kind == NameKind::Context ? contexts_.contains(name)
                                                        : buffers_.contains(name);
    if (!alive) return {name + " is not alive: it was destroyed", index};
  }
  return {};
}

void ReferenceModel::apply(const Operation& op) {
  if (const Verdict v = check(op); !v.ok()) {
    throw std::invalid_argument(operationText(op) + ": " + v.reason);
  }
  const OpForm& form = opForm(op.kind);
  for (size_t i = 0; i < op.names.size(); ++i) {
    if (form.names[i].introduces) used_.emplace(op.names[i], form.names[i].kind);
  }
  const std::string& name = op.names.front();
  switch (op.kind) {
    case OpKind::Create:
      renderers_[name] = {
          op.width, op.height, 0, 0, 0, std::vector<uint32_t>(size_t{op.width} * op.height, 0), {}};
      break;
    case OpKind::Draw: {
      Renderer& r = renderers_.at(name);
      r.pending.push_back({op.triangles, op.seed, r.textureCount, r.textureSize, r.textureSeed});
      break;
    }
    case OpKind::SetTextures: {
      Renderer& r = renderers_.at(name);
      r.textureCount = op.count;
      r.textureSize = op.size;
      r.textureSeed = op.seed;
      break;
    }
    case OpKind::Sync:
    case OpKind::ReadBack:
      break;
    case OpKind::Destroy:
      renderers_.erase(name);
      break;
    case OpKind::CtxCreate:
      contexts_.insert(name);
      break;
    case OpKind::BufCreate:
      buffers_[op.names[1]] = name;
      break;
    case OpKind::BufDestroy:
      buffers_.erase(name);
      break;
    case OpKind::CtxDestroy:
      // Its buffers stay: freeing them later is what the device-level sequences exercise.
      contexts_.erase(name);
      break;
  }
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

bool ReferenceModel::nameUsed(const std::string& name) const {
  return used_.contains(name);
}

std::optional<ReferenceModel::NameKind> ReferenceModel::nameKind(const std::string& name) const {
  const auto it = used_.find(name);
  if (it == used_.end()) return std::nullopt;
  return it->second;
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
