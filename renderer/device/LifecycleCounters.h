// LifecycleCounters.h: the lifecycle counters kept at the device seam, with the meanings of the
// fault-plan contract (docs/fault-plans.md), and the tracker that maintains them.
//
// Pending-ness is defined at the seam, not by the hardware: a command is pending from the call
// that enqueues it (launch, copy_to_device) until a call that waits for its context's queue
// (sync, copy_to_host, ctx_destroy) returns. On sim this is exactly when commands complete; on
// cuda it is when completion is known. Either way the same sequence gives the same snapshots.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "renderer/device/Backend.h"
#include "renderer/device/CallPoint.h"

namespace gpufuzz {

enum class Counter : uint8_t {
  CtxIndex,
  LiveContexts,
  LiveBuffers,
  CtxBuffers,
  Pending,
  OrphanedBuffers,
  CtxDestroyedWithLiveBuffers,
  CtxDestroyedWithPending,
  FreedWithPending,
  Launches,
  CopiesToHost,
  Refs,
  Calls,
  CtxCalls,
  /// The calling thread's number (`@T`), and how many other threads are inside a call at each
  /// point, in CallPoint's order: set by the Device, not the tracker.
  Thread,
  InsideCtxCreate,
  InsideCtxDestroy,
  InsideBufAlloc,
  InsideBufFree,
  InsideLaunch,
  InsideCopyToDevice,
  InsideCopyToHost,
  InsideSync,
  /// Calls failed so far on purpose (docs/failures.md), process-wide and of the call's context.
  Injected,
  CtxInjected,
};
inline constexpr std::size_t kCounterCount = 25;

/// The counter `inside_POINT` of `point`.
inline Counter insideCounter(CallPoint point) {
  return static_cast<Counter>(static_cast<std::size_t>(Counter::InsideCtxCreate) +
                              static_cast<std::size_t>(point));
}

/// The plan-language name: "ctx_index", "live_buffers", ...
std::string_view counterName(Counter counter);
std::optional<Counter> parseCounter(std::string_view name);

/// The counters as they stand just before one device call takes effect.
struct CounterSnapshot {
  std::array<uint64_t, kCounterCount> values{};
  uint64_t operator[](Counter c) const { return values[static_cast<std::size_t>(c)]; }
  uint64_t& operator[](Counter c) { return values[static_cast<std::size_t>(c)]; }
  bool operator==(const CounterSnapshot&) const = default;
};

/// Which call is being made, and on what. `ctx` is the call's context (for buffer calls, the
/// owner); for ctx_create it is unset because the context does not exist yet.
struct CallSite {
  CallPoint point{};
  std::optional<ContextId> ctx;
  std::optional<BufferId> buffer;
};

/// Maintains the counters from the calls the seam reports. Not thread-safe: the seam holds a
/// lock around it.
class LifecycleTracker {
 public:
  /// The counters for `site` before it takes effect; counts the call as made.
  CounterSnapshot beginCall(const CallSite& site);

  void contextCreated(ContextId ctx);
  void contextDestroyed(ContextId ctx);
  void bufferAllocated(ContextId ctx, BufferId buf);
  void bufferFreed(BufferId buf);
  /// A command enqueued on `ctx` that references `buffers`.
  void commandEnqueued(ContextId ctx, std::vector<BufferId> buffers);
  /// A call that waited for `ctx`'s queue returned: nothing is pending there any more.
  void queueDrained(ContextId ctx);
  /// The call at `site`, counted by beginCall, failed on purpose before it took effect.
  void callInjected(const CallSite& site);

  /// The owner of a buffer the tracker knows (live or freed), if any.
  std::optional<ContextId> ownerOf(BufferId buf) const;
  bool contextLive(ContextId ctx) const;
  bool bufferLive(BufferId buf) const;

 private:
  struct ContextState {
    uint64_t index = 0;
    bool live = true;
    uint64_t liveBuffers = 0;
    std::vector<std::vector<BufferId>> pending;
    std::array<uint64_t, 8> calls{};
    uint64_t injected = 0;
  };
  struct BufferState {
    ContextId owner = 0;
    bool live = true;
  };
  uint64_t refsTo(BufferId buf) const;

  std::map<ContextId, ContextState> contexts_;
  /// Contexts with commands pending: a process that runs many sequences keeps every context it
  /// made, and a call must not walk them all.
  std::set<ContextId> withPending_;
  std::map<BufferId, BufferState> buffers_;
  uint64_t contextsCreated_ = 0;
  uint64_t liveContexts_ = 0;
  uint64_t liveBuffers_ = 0;
  uint64_t orphanedBuffers_ = 0;
  uint64_t destroyedWithLiveBuffers_ = 0;
  uint64_t destroyedWithPending_ = 0;
  uint64_t freedWithPending_ = 0;
  uint64_t launches_ = 0;
  uint64_t copiesToHost_ = 0;
  uint64_t injected_ = 0;
  std::array<uint64_t, 8> calls_{};
};

}  // namespace gpufuzz
