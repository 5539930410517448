// HandleChecks.h: what every real backend checks before a call reaches its runtime, because a
// runtime's answer to a released or foreign handle is undefined behaviour, not an error code: the
// handle must be known, and a buffer must belong to the call's context and be large enough.
// Each failure is a DeviceError naming the call that was not made.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "renderer/device/Backend.h"
#include "renderer/device/DeviceError.h"

namespace gpufuzz {

/// The record of handle `id` in `records` (a map from id), or DeviceError at `point`: "<what> was
/// <gone>" for an id handed out before (ids count up from 1, `nextId` is the next), "<what> is
/// unknown" for any other.
template <typename Map>
auto& findHandle(Map& records, uint64_t id, uint64_t nextId, CallPoint point,
                 const std::string& what, const char* gone) {
  auto it = records.find(id);
  if (it != records.end()) return it->second;
  const bool handedOut = id > 0 && id < nextId;
  throw DeviceError(point, what + (handedOut ? std::string(" was ") + gone : " is unknown"));
}

/// DeviceError at `point` unless `buffer` (a record with `owner` and `bytes`) belongs to context
/// `ctx` and holds at least `needed` bytes.
template <typename Buffer>
const Buffer& checkBufferServes(const Buffer& buffer, uint64_t ctx, uint64_t needed,
                                CallPoint point, const std::string& what,
                                const char* noun = "context") {
  if (buffer.owner != ctx) {
    throw DeviceError(point, what + " belongs to " + noun + " " + std::to_string(buffer.owner) +
                                 ", not " + std::to_string(ctx));
  }
  if (buffer.bytes < needed) {
    throw DeviceError(point, what + " holds " + std::to_string(buffer.bytes) + " bytes, " +
                                 std::to_string(needed) + " needed");
  }
  return buffer;
}

/// findHandle for a context map, with the call and what the runtime calls a context ("context",
/// "device") in the message: "CALL: device 3 was destroyed".
template <typename Context>
Context& checkedContext(std::map<ContextId, Context>& contexts, ContextId next, ContextId ctx,
                        CallPoint point, const char* call, const char* noun = "context") {
  return findHandle(contexts, ctx, next, point,
                    std::string(call) + ": " + noun + " " + std::to_string(ctx), "destroyed");
}

/// findHandle and checkBufferServes in one: buffer `buf`, owned by `ctx`, holding at least
/// `bytesNeeded`; `role` says what the call uses it for ("framebuffer", "source").
template <typename Buffer>
const Buffer& checkedBuffer(const std::map<BufferId, Buffer>& buffers, BufferId next, BufferId buf,
                            ContextId ctx, uint64_t bytesNeeded, CallPoint point, const char* call,
                            const char* role, const char* noun = "context") {
  const std::string what = std::string(call) + ": " + role + " buffer " + std::to_string(buf);
  return checkBufferServes(findHandle(buffers, buf, next, point, what, "freed"), ctx, bytesNeeded,
                           point, what, noun);
}

}  // namespace gpufuzz
