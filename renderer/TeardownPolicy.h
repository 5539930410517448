// TeardownPolicy.h: how a GpuRenderer releases what it holds. `shipped` carries the seed's three
// defenses; each other policy drops exactly one of them, so the harness can be proven on it.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace gpufuzz {

enum class TeardownPolicy : uint8_t { Shipped, ContextFirst, NoDestroySync, NoTextureWait };

/// The defenses a policy keeps.
struct Defenses {
  /// The destructor waits for the queue before releasing anything.
  bool destroyWaits = true;
  /// The destructor releases every buffer, then the context (never the context first).
  bool buffersBeforeContext = true;
  /// set_textures waits for the queue before releasing the textures it replaces.
  bool textureReplaceWaits = true;
};

Defenses defensesOf(TeardownPolicy policy);
std::string_view policyName(TeardownPolicy policy);
std::optional<TeardownPolicy> parsePolicy(std::string_view name);
std::vector<std::string_view> policyNames();

}  // namespace gpufuzz
