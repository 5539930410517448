// HandleChecks.h: the checks a backend makes on the handles it is given before it calls its
// runtime, with the same messages on every backend: a context that is unknown or was destroyed, a
// buffer that is unknown, was freed, belongs to another context or is too small. Failures throw
// DeviceError naming the call the backend would have made.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "renderer/device/Backend.h"
#include "renderer/device/DeviceError.h"

namespace gpufuzz {

/// The live context `ctx` of `contexts` (ids below `next` were handed out); `noun` is what the
/// runtime calls a context ("context", "device").
template <typename Context>
Context& checkedContext(std::map<ContextId, Context>& contexts, ContextId next, ContextId ctx,
                        CallPoint point, const char* call, const char* noun = "context") {
  auto it = contexts.find(ctx);
  if (it != contexts.end()) return it->second;
  const bool destroyed = ctx > 0 && ctx < next;
  throw DeviceError(point, std::string(call) + ": " + noun + " " + std::to_string(ctx) +
                               (destroyed ? " was destroyed" : " is unknown"));
}

/// Buffer `buf` of `buffers` (each with `owner` and `bytes`), owned by `ctx` and holding at
/// least `bytesNeeded`; `role` says what the call uses it for ("framebuffer", "source").
template <typename Buffer>
const Buffer& checkedBuffer(const std::map<BufferId, Buffer>& buffers, BufferId next,
                            BufferId buf, ContextId ctx, uint64_t bytesNeeded, CallPoint point,
                            const char* call, const char* role, const char* noun = "context") {
  const std::string what = std::string(call) + ": " + role + " buffer " + std::to_string(buf);
  auto it = buffers.find(buf);
  if (it == buffers.end()) {
    const bool freed = buf > 0 && buf < next;
    throw DeviceError(point, what + (freed ? " was freed" : " is unknown"));
  }
  const Buffer& b = it->second;
  if (b.owner != ctx) {
    throw DeviceError(point, what + " belongs to " + noun + " " + std::to_string(b.owner) +
                                 ", not " + std::to_string(ctx));
  }
  if (b.bytes < bytesNeeded) {
    throw DeviceError(point, what + " holds " + std::to_string(b.bytes) + " bytes, " +
                                 std::to_string(bytesNeeded) + " needed");
  }
  return b;
}

}  // namespace gpufuzz
