// Operation.h: one lifecycle operation of a sequence (sequences.md), with its arguments and
// their bounds.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
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

/// What a name denotes. Names share one namespace: a name denotes one thing, once.
enum class NameKind : uint8_t { Renderer, Context, Buffer };
std::string_view nameKindName(NameKind kind);  // "renderer", "context", "buffer"

/// Why `name` is not a valid name (`[a-z][a-z0-9_]*`, at most 32 characters), or empty.
std::string nameError(std::string_view name);
inline constexpr size_t kMaxNameLength = 32;

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

/// One positional name of an operation: what it must denote, and whether the operation
/// introduces it (create, ctx_create, buf_create's B) rather than using a live one.
struct NameSlot {
  NameKind kind;
  bool introduces;
  std::string_view placeholder;  // "R", "C", "B", as the contract writes the form
};

/// One `key=value` argument: its inclusive bounds, its default, and the field that holds it.
struct ArgSpec {
  std::string_view key;
  uint64_t min, max, defaultValue;
  uint64_t (*get)(const Operation&);
  void (*set)(Operation&, uint64_t);
};

/// The form of an operation, as the contract's tables state it. This one table drives parsing,
/// printing, validation and generation, so they cannot disagree.
struct OpForm {
  OpKind kind;
  std::string_view name;
  std::span<const NameSlot> names;
  std::span<const ArgSpec> args;

  const ArgSpec* arg(std::string_view key) const;
  /// "buf_create C B [bytes=1..2147483648]": the form for messages.
  std::string usage() const;
};
const OpForm& opForm(OpKind kind);
/// Every form, in OpKind order.
std::span<const OpForm> opForms();

/// "draw r0 triangles=9 seed=3": arguments at their default are left out.
std::string operationText(const Operation& op);

}  // namespace gpufuzz
