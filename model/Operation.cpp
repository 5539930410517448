// Operation.cpp: the table of operation forms (sequences.md) and what is derived from it.
#include "model/Operation.h"

#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace gpufuzz {
namespace {

using B = ArgBounds;
constexpr uint64_t kMaxSeed = std::numeric_limits<uint32_t>::max();

// A field is written only after its value was checked against its bounds, so the cast to a
// 32-bit field loses nothing.
template <auto Field>
uint64_t getField(const Operation& op) {
  return op.*Field;
}
template <auto Field>
void setField(Operation& op, uint64_t v) {
  op.*Field = static_cast<std::remove_cvref_t<decltype(op.*Field)>>(v);
}
template <auto Field>
constexpr ArgSpec arg(std::string_view key, uint64_t min, uint64_t max, uint64_t defaultValue) {
  return {key, min, max, defaultValue, &getField<Field>, &setField<Field>};
}

constexpr std::array kCreateArgs = {
    arg<&Operation::width>("width", B::kMinSize, B::kMaxSize, B::kDefaultSize),
    arg<&Operation::height>("height", B::kMinSize, B::kMaxSize, B::kDefaultSize),
};
constexpr std::array kDrawArgs = {
    arg<&Operation::triangles>("triangles", B::kMinTriangles, B::kMaxTriangles,
                               B::kDefaultTriangles),
    arg<&Operation::seed>("seed", 0, kMaxSeed, 0),
};
constexpr std::array kSetTexturesArgs = {
    arg<&Operation::count>("count", B::kMinCount, B::kMaxCount, B::kDefaultCount),
    arg<&Operation::size>("size", B::kMinTexSize, B::kMaxTexSize, B::kDefaultTexSize),
    arg<&Operation::seed>("seed", 0, kMaxSeed, 0),
};
constexpr std::array kBufCreateArgs = {
    arg<&Operation::bytes>("bytes", B::kMinBytes, B::kMaxBytes, B::kDefaultBytes),
};

constexpr std::array kNewRenderer = {NameSlot{NameKind::Renderer, true, "R"}};
constexpr std::array kRenderer = {NameSlot{NameKind::Renderer, false, "R"}};
constexpr std::array kNewContext = {NameSlot{NameKind::Context, true, "C"}};
constexpr std::array kContext = {NameSlot{NameKind::Context, false, "C"}};
constexpr std::array kContextNewBuffer = {NameSlot{NameKind::Context, false, "C"},
                                          NameSlot{NameKind::Buffer, true, "B"}};
constexpr std::array kBuffer = {NameSlot{NameKind::Buffer, false, "B"}};

const std::array<OpForm, 10> kForms = {{
    {OpKind::Create, "create", kNewRenderer, kCreateArgs},
    {OpKind::Draw, "draw", kRenderer, kDrawArgs},
    {OpKind::Sync, "sync", kRenderer, {}},
    {OpKind::SetTextures, "set_textures", kRenderer, kSetTexturesArgs},
    {OpKind::ReadBack, "read_back", kRenderer, {}},
    {OpKind::Destroy, "destroy", kRenderer, {}},
    {OpKind::CtxCreate, "ctx_create", kNewContext, {}},
    {OpKind::BufCreate, "buf_create", kContextNewBuffer, kBufCreateArgs},
    {OpKind::BufDestroy, "buf_destroy", kBuffer, {}},
    {OpKind::CtxDestroy, "ctx_destroy", kContext, {}},
}};

}  // namespace

const ArgSpec* OpForm::arg(std::string_view key) const {
  for (const ArgSpec& a : args) {
    if (a.key == key) return &a;
  }
  return nullptr;
}

std::string OpForm::usage() const {
  std::string text(name);
  for (const NameSlot& n : names) {
    text += " " + std::string(n.placeholder);
  }
  for (const ArgSpec& a : args) {
    text += " [" + std::string(a.key) + "=" + std::to_string(a.min) + ".." + std::to_string(a.max) +
            "]";
  }
  return text;
}

const OpForm& opForm(OpKind kind) {
  return kForms.at(static_cast<size_t>(kind));
}
std::span<const OpForm> opForms() {
  return kForms;
}

std::string_view opKindName(OpKind kind) {
  return opForm(kind).name;
}

std::optional<OpKind> parseOpKind(std::string_view name) {
  for (const OpForm& f : kForms) {
    if (f.name == name) return f.kind;
  }
  return std::nullopt;
}

bool isRendererOp(OpKind kind) {
  return opForm(kind).names.front().kind == NameKind::Renderer;
}

std::string_view nameKindName(NameKind kind) {
  switch (kind) {
    case NameKind::Renderer:
      return "renderer";
    case NameKind::Context:
      return "context";
    case NameKind::Buffer:
      return "buffer";
  }
  return "?";
}

std::string nameError(std::string_view name) {
  const auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  const auto tail = [&](char c) { return lower(c) || (c >= '0' && c <= '9') || c == '_'; };
  bool ok = !name.empty() && name.size() <= kMaxNameLength && lower(name.front());
  for (size_t i = 1; ok && i < name.size(); ++i) {
    ok = tail(name[i]);
  }
  if (ok) return {};
  return "bad name '" + std::string(name) + "': names match [a-z][a-z0-9_]*, at most " +
         std::to_string(kMaxNameLength) + " characters";
}

std::string operationText(const Operation& op) {
  const OpForm& form = opForm(op.kind);
  std::string text(form.name);
  for (const std::string& n : op.names) {
    text += " " + n;
  }
  for (const ArgSpec& a : form.args) {
    const uint64_t v = a.get(op);
    if (v != a.defaultValue) text += " " + std::string(a.key) + "=" + std::to_string(v);
  }
  return text;
}

}  // namespace gpufuzz
