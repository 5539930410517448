// Operation.h: one lifecycle operation of a sequence (sequences.md), with its arguments and
// their bounds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpufuzz {

enum class OpKind : uint8_t {
  // Renderer level: through GpuRenderer.
  Create,
  Draw,
  Sync,
  SetTextures,
  ReadBack,
  Destroy,
  // Device level: the bare runtime.
  CtxCreate,
  BufCreate,
  BufDestroy,
  CtxDestroy,
};

std::string_view opKindName(OpKind kind);  // "create", "buf_destroy", ...
std::optional<OpKind> parseOpKind(std::string_view name);
bool isRendererOp(OpKind kind);

/// Argument defaults and bounds (inclusive), as the contract states them.
struct ArgBounds {
  static constexpr uint32_t kDefaultSize = 64, kMinSize = 1, kMaxSize = 4096;
  static constexpr uint32_t kDefaultTriangles = 4, kMinTriangles = 1, kMaxTriangles = 1024;
  static constexpr uint32_t kDefaultCount = 1, kMinCount = 0, kMaxCount = 16;
  static constexpr uint32_t kDefaultTexSize = 32, kMinTexSize = 1, kMaxTexSize = 2048;
  static constexpr uint64_t kDefaultBytes = 256, kMinBytes = 1, kMaxBytes = 1ULL << 31;
};

struct Operation {
  OpKind kind = OpKind::Create;
  /// create/draw/sync/set_textures/read_back/destroy: {R}; ctx_create/ctx_destroy: {C};
  /// buf_create: {C, B}; buf_destroy: {B}.
  std::vector<std::string> names;
  uint32_t width = ArgBounds::kDefaultSize;           // create
  uint32_t height = ArgBounds::kDefaultSize;          // create
  uint32_t triangles = ArgBounds::kDefaultTriangles;  // draw
  uint32_t seed = 0;                                  // draw, set_textures
  uint32_t count = ArgBounds::kDefaultCount;          // set_textures
  uint32_t size = ArgBounds::kDefaultTexSize;         // set_textures
  uint64_t bytes = ArgBounds::kDefaultBytes;          // buf_create
  /// 1-based line in the file it was read from; 0 when generated.
  int line = 0;

  bool operator==(const Operation& o) const {
    return kind == o.kind && names == o.names && width == o.width && height == o.height &&
           triangles == o.triangles && seed == o.seed && count == o.count && size == o.size &&
           bytes == o.bytes;
  }
};

/// "draw r0 triangles=9 seed=3": arguments at their default are left out.
std::string operationText(const Operation& op);

}  // namespace gpufuzz
