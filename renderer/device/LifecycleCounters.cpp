// LifecycleCounters.cpp: maintenance of the seam's lifecycle counters.
#include "renderer/device/LifecycleCounters.h"

#include <algorithm>

namespace gpufuzz {

namespace {
constexpr std::array<std::string_view, kCounterCount> kCounterNames = {
    "ctx_index",
    "live_contexts",
    "live_buffers",
    "ctx_buffers",
    "pending",
    "orphaned_buffers",
    "ctx_destroyed_with_live_buffers",
    "ctx_destroyed_with_pending",
    "freed_with_pending",
    "launches",
    "copies_to_host",
    "refs",
    "calls",
    "ctx_calls",
    "thread",
    "inside_ctx_create",
    "inside_ctx_destroy",
    "inside_buf_alloc",
    "inside_buf_free",
    "inside_launch",
    "inside_copy_to_device",
    "inside_copy_to_host",
    "inside_sync",
    "injected",
    "ctx_injected",
};
}  // namespace

std::string_view counterName(Counter counter) {
  return kCounterNames[static_cast<std::size_t>(counter)];
}

std::optional<Counter> parseCounter(std::string_view name) {
  for (std::size_t i = 0; i < kCounterNames.size(); ++i) {
    if (kCounterNames[i] == name) return static_cast<Counter>(i);
  }
  return std::nullopt;
}

CounterSnapshot LifecycleTracker::beginCall(const CallSite& site) {
  CounterSnapshot s;
  const auto point = static_cast<std::size_t>(site.point);
  s[Counter::LiveContexts] = liveContexts_;
  s[Counter::LiveBuffers] = liveBuffers_;
  s[Counter::OrphanedBuffers] = orphanedBuffers_;
  s[Counter::CtxDestroyedWithLiveBuffers] = destroyedWithLiveBuffers_;
  s[Counter::CtxDestroyedWithPending] = destroyedWithPending_;
  s[Counter::FreedWithPending] = freedWithPending_;
  s[Counter::Launches] = launches_;
  s[Counter::CopiesToHost] = copiesToHost_;
  s[Counter::Calls] = calls_[point];
  s[Counter::Injected] = injected_;

  ContextState* ctx = nullptr;
  if (site.ctx) {
    auto it = contexts_.find(*site.ctx);
    if (it != contexts_.end()) ctx = &it->second;
  }
  if (site.point == CallPoint::CtxCreate) {
    s[Counter::CtxIndex] = contextsCreated_;
  } else if (ctx != nullptr) {
    s[Counter::CtxIndex] = ctx->index;
    s[Counter::CtxBuffers] = ctx->liveBuffers;
    s[Counter::Pending] = ctx->pending.size();
    s[Counter::CtxCalls] = ctx->calls[point];
    s[Counter::CtxInjected] = ctx->injected;
    ++ctx->calls[point];
  }
  if (site.point == CallPoint::BufFree && site.buffer) s[Counter::Refs] = refsTo(*site.buffer);

  ++calls_[point];
  if (site.point == CallPoint::Launch) ++launches_;
  if (site.point == CallPoint::CopyToHost) ++copiesToHost_;
  if (site.point == CallPoint::CtxDestroy && ctx != nullptr) {
    if (ctx->liveBuffers > 0) ++destroyedWithLiveBuffers_;
    if (!ctx->pending.empty()) ++destroyedWithPending_;
  }
  if (site.point == CallPoint::BufFree && s[Counter::Refs] > 0) ++freedWithPending_;
  return s;
}

void LifecycleTracker::callInjected(const CallSite& site) {
  ++injected_;
  if (!site.ctx || site.point == CallPoint::CtxCreate) return;
  if (const auto it = contexts_.find(*site.ctx); it != contexts_.end()) ++it->second.injected;
}

void LifecycleTracker::contextCreated(ContextId ctx) {
  ContextState state;
  state.index = contextsCreated_++;
  contexts_[ctx] = state;
  ++liveContexts_;
}

void LifecycleTracker::contextDestroyed(ContextId ctx) {
  auto it = contexts_.find(ctx);
  if (it == contexts_.end() || !it->second.live) return;
  it->second.live = false;
  it->second.pending.clear();
  withPending_.erase(ctx);
  orphanedBuffers_ += it->second.liveBuffers;
  --liveContexts_;
}

void LifecycleTracker::bufferAllocated(ContextId ctx, BufferId buf) {
  buffers_[buf] = BufferState{ctx, true};
  ++liveBuffers_;
  auto it = contexts_.find(ctx);
  if (it != contexts_.end()) ++it->second.liveBuffers;
}

void LifecycleTracker::bufferFreed(BufferId buf) {
  auto it = buffers_.find(buf);
  if (it == buffers_.end() || !it->second.live) return;
  it->second.live = false;
  --liveBuffers_;
  auto owner = contexts_.find(it->second.owner);
  if (owner != contexts_.end()) {
    --owner->second.liveBuffers;
    if (!owner->second.live) --orphanedBuffers_;
  }
}

void LifecycleTracker::commandEnqueued(ContextId ctx, std::vector<BufferId> buffers) {
  auto it = contexts_.find(ctx);
  if (it == contexts_.end() || !it->second.live) return;
  it->second.pending.push_back(std::move(buffers));
  withPending_.insert(ctx);
}

void LifecycleTracker::queueDrained(ContextId ctx) {
  auto it = contexts_.find(ctx);
  if (it != contexts_.end()) it->second.pending.clear();
  withPending_.erase(ctx);
}

std::optional<ContextId> LifecycleTracker::ownerOf(BufferId buf) const {
  auto it = buffers_.find(buf);
  if (it == buffers_.end()) return std::nullopt;
  return it->second.owner;
}

bool LifecycleTracker::contextLive(ContextId ctx) const {
  auto it = contexts_.find(ctx);
  return it != contexts_.end() && it->second.live;
}

bool LifecycleTracker::bufferLive(BufferId buf) const {
  auto it = buffers_.find(buf);
  return it != buffers_.end() && it->second.live;
}

uint64_t LifecycleTracker::refsTo(BufferId buf) const {
  uint64_t refs = 0;
  for (const ContextId id : withPending_) {
    for (const auto& command : contexts_.at(id).pending) {
      refs += static_cast<uint64_t>(std::count(command.begin(), command.end(), buf) > 0);
    }
  }
  return refs;
}

}  // namespace gpufuzz
