// VulkanShadow.h: what the vulkan model's executor knows of a sequence's objects, without Vulkan.
//
// The contract:
// - Objects are kept by the sequence's names (names never repeat within a sequence, and every
//   sequence releases what it made). Each holds its handle and the state Vulkan's rules speak of:
//   a command buffer's state and recorded commands, a fence's submission, a semaphore's pending
//   signal, a memory's bytes.
// - Submissions are numbered in queue order. One is complete once a wait has shown it (its fence
//   waited, a later one's, a timeline value it signals reached, the queue idle): the same events
//   on which the validation layer retires work, so "in use by pending work" means the same here
//   and in the layer, never a matter of timing.
// - Memory contents: a byte is known once a recorded fill, copy or dispatch wrote it and its
//   submission went to the queue (every recorded command is followed by a full barrier, so
//   submissions take effect in queue order). A read compares the known bytes that no pending
//   submission writes.
// - Zombies: an object whose destroy or free was refused stays in its map, alive as the device
//   sees it, and is named in `zombies` until the executor ends it.
// - Predictions: each predict function returns the rule its call would break given what the shadow
//   knows, or none when the call is valid. The executor makes the call under the layer and then
//   applies it here, so a handler reads predict, call, apply.
// Not thread-safe: the executor holds its lock around every use.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "renderer/device/ExecutorKit.h"

namespace gpufuzz::vulkan {

/// What messages call the executor, a missing name's among them (kit::Kind).
inline constexpr const char* kOwner = "vulkan executor";

/// A rule of the Vulkan specification that a call would break: the VUID and why.
struct Breach {
  Breach(std::string rule, std::string because, bool dead = false)
      : vuid(std::move(rule)), why(std::move(because)), deadHandle(dead) {}
  std::string vuid;
  std::string why;
  /// The call would hand Vulkan a handle that is already freed (its pool went): the layer cannot
  /// be asked without undefined behaviour, so only the executor refuses it.
  bool deadHandle = false;
  /// Why the layer cannot see this breach (it misses the use that makes it one, and the call
  /// would then do harm); empty when it can. The executor then refuses the call itself.
  std::string layerMisses;
  /// The rule is about pending work, and work that waits for a semaphore is pending:
  /// the layer may have retired it already (Shadow::semaphoreWorkPending).
  bool uncertain = false;
  /// Other ids the layer may report for this call instead: the same rule in another version of
  /// the layer (renumbered, or UNASSIGNED-...), or another rule the same call breaks.
  std::vector<std::string> also;
};

/// One command recorded into a command buffer (each followed by a full barrier).
struct Recorded {
  enum class Kind { Fill, Copy, Dispatch } kind = Kind::Fill;
  std::string dst;  // the buffer written: fill's, copy's destination, the dispatch set's buffer
  std::string src;  // copy's source
  uint32_t value = 0;
  bool xorOp = false;  // a dispatch's pipeline: add (false) or xor
};

struct CmdState {
  enum class Phase { Initial, Recording, Executable, Invalid } phase = Phase::Initial;
  VkCommandBuffer handle = VK_NULL_HANDLE;
  std::string pool;
  /// Freed with its pool (vkDestroyCommandPool): the handle is dead.
  bool freed = false;
  bool oneTime = false;
  /// Begun for simultaneous use: it may be submitted again while pending.
  bool simultaneous = false;
  /// Submitted since its last begin (matters for one-time submission).
  bool submittedSinceBegin = false;
  std::vector<Recorded> commands;
  /// Every object the recorded commands use, by name (buffers, their memory, pipelines, layouts,
  /// sets, descriptor pools).
  std::set<std::string> uses;
  /// Those the validation layer tracks too: the 1.3.239 layer does not track buffers (and their
  /// memory) that only vkCmdCopyBuffer uses (corpus/runtimes/README.md), nor a descriptor set
  /// bound for a dispatch it refused.
  std::set<std::string> layerUses;
  /// Why it is invalid, when it is; and whether the layer knows (a use it tracks was ended).
  std::string invalidBecause;
  bool layerSeesInvalid = false;
  /// The message ids the 1.3.239 layer gives VUID-vkQueueSubmit-pCommandBuffers-00070 for each
  /// cause so far (UNASSIGNED-CoreValidation-DrawState-InvalidCommandBuffer-VkBuffer, ...): it
  /// names one of them.
  std::vector<std::string> invalidIds;
  /// It was recording when it went invalid: a layer that does not see why still sees it recording.
  bool invalidWhileRecording = false;
  uint64_t lastSubmission = 0;
};

struct FenceState {
  VkFence handle = VK_NULL_HANDLE;
  /// Signalled as far as the executor knows: made signalled, or its submission seen complete.
  bool signalled = false;
  /// The submission that signals it, since its last reset; 0 for none.
  uint64_t submission = 0;
};

struct SemaphoreState {
  VkSemaphore handle = VK_NULL_HANDLE;
  /// A signal operation submitted and not yet waited on by a submission.
  bool signalled = false;
};

struct TimelineState {
  VkSemaphore handle = VK_NULL_HANDLE;
  /// The largest value a submission or the host has signalled (or will).
  uint64_t promised = 0;
  /// The value the executor knows the counter has reached.
  uint64_t reached = 0;
  /// Value → the submission that signals it.
  std::map<uint64_t, uint64_t> signals;
};

struct BufferState {
  VkBuffer handle = VK_NULL_HANDLE;
  uint64_t size = 0;
  /// What vkGetBufferMemoryRequirements asked for.
  uint64_t required = 0;
  uint32_t memoryTypes = 0;
  /// The memory bound to it while that memory lives; empty otherwise.
  std::string memory;
  /// Bound once: a buffer is never bound again (it is not sparse).
  bool everBound = false;
  /// The memory it was bound to, kept after that memory is freed: the layer still knows it.
  std::string boundTo;
};

struct MemoryState {
  VkDeviceMemory handle = VK_NULL_HANDLE;
  uint64_t size = 0;
  /// The live buffers bound to it.
  std::set<std::string> buffers;
  /// Each byte's value, or -1 when no operation of the model wrote it.
  std::vector<int16_t> bytes;
};

struct PoolState {
  VkCommandPool handle = VK_NULL_HANDLE;
  std::set<std::string> cmds;
};

struct DpoolState {
  VkDescriptorPool handle = VK_NULL_HANDLE;
  bool freeSets = false;
  std::set<std::string> sets;
};

struct SetState {
  VkDescriptorSet handle = VK_NULL_HANDLE;
  std::string dpool;
  /// Freed with its pool (reset or destroyed): the handle is dead.
  bool freed = false;
  /// The buffer written to binding 0; empty before the first update.
  std::string buffer;
};

struct LayoutState {
  VkPipelineLayout handle = VK_NULL_HANDLE;
};

struct PipelineState {
  VkPipeline handle = VK_NULL_HANDLE;
  std::string layout;
  bool xorOp = false;
};

/// One vkQueueSubmit: what it uses and how far into each memory it writes.
struct Submission {
  uint64_t number = 0;
  std::set<std::string> uses;
  std::set<std::string> layerUses;
  /// Memory name → bytes from offset 0 that its commands write.
  std::map<std::string, uint64_t> writes;
  /// It waits for a semaphore: the layer may retire it before a wait shows it.
  bool semaphores = false;
};

/// The sync objects of one vkQueueSubmit, by name; an empty name for none.
struct SubmitSync {
  std::string fence{};
  /// A binary semaphore signalled, and one waited for.
  std::string signal{};
  std::string wait{};
  /// A timeline signalled one past its promised value, and timelines waited for at theirs.
  std::string timeline{};
  std::span<const std::string> timelineWaits{};
};

/// What a submit would break, and whether the command buffer itself is fine: only then does the
/// executor record it first when it is not executable.
struct SubmitPrediction {
  std::optional<Breach> breach;
  bool commandsFine = true;
};

class Shadow {
 public:
  /// The live objects of each kind of the model, by name.
  kit::Kind<PoolState> pools{kOwner, "pool"};
  kit::Kind<CmdState> cmds{kOwner, "cmd"};
  kit::Kind<FenceState> fences{kOwner, "fence"};
  kit::Kind<SemaphoreState> semaphores{kOwner, "semaphore"};
  kit::Kind<TimelineState> timelines{kOwner, "timeline"};
  kit::Kind<BufferState> buffers{kOwner, "buffer"};
  kit::Kind<MemoryState> memories{kOwner, "memory"};
  kit::Kind<DpoolState> dpools{kOwner, "dpool"};
  kit::Kind<SetState> sets{kOwner, "set"};
  kit::Kind<LayoutState> layouts{kOwner, "layout"};
  kit::Kind<PipelineState> pipelines{kOwner, "pipeline"};
  /// Whether the validation layer tracks what vkCmdCopyBuffer uses (from 1.3.292 on).
  bool layerTracksCopies = false;
  /// Whether the layer retires finished submissions on its own, between the executor's waits.
  /// Then whether it still counts a submission pending is a matter of timing.
  bool layerRetiresOnItsOwn = false;
  /// Zombies, name → kind: objects whose end the layer (or the executor) refused as predicted.
  /// The sequence's names are dead, the handles alive in the maps above until the executor ends
  /// them at the sequence's end, after vkDeviceWaitIdle.
  std::map<std::string, std::string> zombies;

  /// The pending submission that uses `name`, if any (the oldest).
  const Submission* pendingUse(const std::string& name) const;
  /// Whether a pending submission uses `name` in a way the layer tracks.
  bool layerSeesPendingUse(const std::string& name) const;
  bool pending(uint64_t submission) const { return submission > completed_; }
  /// Submissions up to `number` are complete.
  void complete(uint64_t number);
  void completeAll() { complete(last_); }
  uint64_t lastSubmission() const { return last_; }
  bool anyPending() const { return !submissions_.empty(); }

  /// Moves every command buffer that recorded a use of `name` (and is recording or executable)
  /// to the invalid state, saying why; `object` is the Vulkan type of `name` ("VkBuffer").
  void invalidateUsers(const std::string& name, const std::string& why, const char* object);

  /// Appends `command` to `cmd` and records what it uses.
  void record(CmdState& cmd, Recorded command);
  /// Records that `cmd` uses `name` (not through a copy).
  static void use(CmdState& cmd, const std::string& name);

  /// Queues `cmd`'s commands as submission number lastSubmission()+1 with the sync objects of
  /// `sync`, applying their effects to the memory shadows and to the sync objects' states.
  void submit(CmdState& cmd, const SubmitSync& sync);
  /// The value a submit with `sync` signals its timeline to: one past the value promised.
  uint64_t nextTimelineValue(const SubmitSync& sync) const;
  /// Whether a pending submission waits for a semaphore. The 1.3.239 layer retires such work when
  /// the semaphore's operations are notified (its signal retired, a counter read), which may be
  /// before a wait of the executor's shows it: "pending" is then uncertain.
  bool semaphoreWorkPending() const;
  /// Whether the layer may already have retired what the shadow holds pending: with work that
  /// waits for a semaphore, or any pending work under a layer that retires on its own.
  bool pendingUncertain() const;

  /// The first byte of memory `name` that no pending submission writes.
  uint64_t settledFrom(const std::string& memory) const;

  /// Whether the shadow holds any object; a description of them.
  std::string alive() const;

  // What calls do to the objects once made.
  /// A reset of `cmd`, by itself or with its pool: initial and empty.
  static void reset(CmdState& cmd);
  /// A begin of `cmd`: recording from empty, for one submission or for simultaneous use.
  static void begin(CmdState& cmd, bool oneTime, bool simultaneous);
  /// Binds `memory` to `buffer`.
  void bind(const std::string& buffer, const std::string& memory);
  /// Frees the sets of descriptor pool `dpool`, as a reset or destroy of it does.
  void dropSets(DpoolState& dpool);
  /// The highest submission that signals a value of `timeline` up to `value`.
  static uint64_t signalledThrough(const TimelineState& timeline, uint64_t value);
  /// Records what a dispatch binds on `cmd`: its pipeline, layout, set and the set's pool. After
  /// a dispatch the layer refused, it tracks only the pipeline (`dispatched` false).
  void bindForDispatch(CmdState& cmd, const std::string& pipeline, const std::string& set,
                       bool dispatched);

  // Ending objects: the bookkeeping once `name` has ended, one function a kind.
  void forgetPool(const std::string& name);
  void forgetCmd(const std::string& name);
  void forgetFence(const std::string& name);
  void forgetSemaphore(const std::string& name);
  void forgetTimeline(const std::string& name);
  void forgetBuffer(const std::string& name);
  void forgetMemory(const std::string& name);
  void forgetDpool(const std::string& name);
  void forgetSet(const std::string& name);
  void forgetLayout(const std::string& name);
  void forgetPipeline(const std::string& name);
  /// Whether set `name` can only end with its pool: its pool lacks the free-set bit.
  bool setEndsWithPool(const std::string& name) const;

  // Predictions: the rule each call would break, or none (VulkanShadow.cpp says which rules).
  std::optional<Breach> predictPoolReset(const std::string& pool) const;
  std::optional<Breach> predictPoolDestroy(const std::string& pool) const;
  /// vkBeginCommandBuffer on `cmd`: freed, pending, or recording already.
  std::optional<Breach> predictBegin(const std::string& cmd) const;
  std::optional<Breach> predictEnd(const std::string& cmd) const;
  std::optional<Breach> predictCmdReset(const std::string& cmd) const;
  std::optional<Breach> predictCmdFree(const std::string& cmd) const;
  std::optional<Breach> predictFill(const std::string& buffer) const;
  std::optional<Breach> predictCopy(const std::string& src, const std::string& dst) const;
  /// vkCmdBindDescriptorSets of `set` with `pipeline`'s layout: a handle freed or destroyed.
  std::optional<Breach> predictBindSet(const std::string& pipeline, const std::string& set) const;
  /// vkCmdDispatch with `set`: its buffer unwritten, destroyed or unbound.
  std::optional<Breach> predictDispatch(const std::string& set) const;
  SubmitPrediction predictSubmit(const std::string& cmd, const SubmitSync& sync) const;
  std::optional<Breach> predictFenceReset(const std::string& fence) const;
  std::optional<Breach> predictFenceDestroy(const std::string& fence) const;
  /// vkDestroySemaphore of a binary or timeline semaphore.
  std::optional<Breach> predictSemaphoreDestroy(const std::string& semaphore) const;
  std::optional<Breach> predictTimelineSignal(const std::string& timeline) const;
  std::optional<Breach> predictBufferDestroy(const std::string& buffer) const;
  std::optional<Breach> predictMemoryBind(const std::string& buffer,
                                          const std::string& memory) const;
  std::optional<Breach> predictMemoryFree(const std::string& memory) const;
  std::optional<Breach> predictDpoolReset(const std::string& dpool) const;
  std::optional<Breach> predictDpoolDestroy(const std::string& dpool) const;
  std::optional<Breach> predictSetUpdate(const std::string& set, const std::string& buffer) const;
  std::optional<Breach> predictSetFree(const std::string& set) const;
  std::optional<Breach> predictLayoutDestroy(const std::string& layout) const;
  std::optional<Breach> predictPipelineDestroy(const std::string& pipeline) const;

 private:
  /// The memory behind buffer `name`, or null.
  MemoryState* memoryOf(const std::string& buffer);
  void apply(const Recorded& command, Submission& submission);
  /// Queues `cmd`'s commands; `extra` are the sync objects it uses. Returns its number.
  uint64_t queue(CmdState& cmd, const std::set<std::string>& extra, bool syncs);

  /// A breach of a rule about pending work, uncertain where the layer may have retired that work
  /// already. `name`: the object in use, when the layer may not track that use.
  Breach inUse(std::string vuid, std::string why, const std::string& name = {}) const;
  /// A breach when `buffer` has no memory bound.
  std::optional<Breach> unbound(const std::string& buffer, const char* vuid) const;
  /// A breach when a command buffer of `pool` is pending.
  std::optional<Breach> pendingPool(const std::string& pool, const char* vuid) const;
  /// A breach when `fence` is pending.
  std::optional<Breach> pendingFence(const std::string& fence, const char* vuid) const;
  /// A breach when `cmd` is pending.
  std::optional<Breach> pendingCmd(const std::string& cmd, const char* vuid) const;
  /// A breach when a pending submission uses `name`, an object of `what` ("buffer").
  std::optional<Breach> pendingObject(const std::string& name, const char* vuid,
                                      const std::string& what, bool layerMayMiss) const;

  std::vector<Submission> submissions_;  // pending ones, oldest first
  uint64_t last_ = 0;
  uint64_t completed_ = 0;
};

}  // namespace gpufuzz::vulkan
