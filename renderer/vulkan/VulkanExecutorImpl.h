// VulkanExecutorImpl.h: the executor of the `vulkan` model, shared by its source files and private
// to this folder (VulkanExecutor.h has the contract).
//
// The files, by concern:
// - VulkanExecutor.cpp: the instance and device, the op table, run() and the locks.
// - VulkanOracle.cpp: the oracle of rules, the per-kind table, zombies, release and leaks.
// - VulkanCommands.cpp: command pools, command buffers, their recording and the queue's submits.
// - VulkanSync.cpp: waits, fences, binary and timeline semaphores.
// - VulkanResources.cpp: buffers, memory, descriptor pools and sets, layouts and pipelines.
// Every handler reads predict (the shadow's), call (under guard and check), apply (the shadow's).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "renderer/Backends.h"
#include "renderer/device/CallPoint.h"
#include "renderer/device/ExecutorKit.h"
#include "renderer/device/Turns.h"
#include "renderer/vulkan/VulkanAllocator.h"
#include "renderer/vulkan/VulkanApi.h"
#include "renderer/vulkan/VulkanDeviceMemory.h"
#include "renderer/vulkan/VulkanShadow.h"
#include "renderer/vulkan/VulkanValidation.h"

namespace gpufuzz::vulkan {

/// Invocations per workgroup: local_size_x of Lifecycle.comp.
inline constexpr uint32_t kGroup = 64;
/// Sets and descriptors per descriptor pool: more than a sequence's operations can allocate, so
/// allocation never runs out (that would be VK_ERROR_OUT_OF_POOL_MEMORY, the pool's size).
inline constexpr uint32_t kSetsPerPool = 64;

/// Thrown by guard() before any call of an operation whose predicted rule is about pending work
/// that the layer may have retired already: run() waits for the queue and runs it again.
struct Uncertain {};
/// How often an operation waits for the queue while other threads keep queueing work.
inline constexpr int kUncertainTries = 64;

/// Where a call's failure is said to happen (fault plans do not act on runtime models).
inline constexpr CallPoint kMake = CallPoint::BufAlloc;
inline constexpr CallPoint kEnd = CallPoint::BufFree;
inline constexpr CallPoint kRecord = CallPoint::Launch;
inline constexpr CallPoint kWait = CallPoint::Sync;
inline constexpr CallPoint kRead = CallPoint::CopyToHost;

class Executor final : public ModelExecutor {
 public:
  explicit Executor(const BackendOptions& options);
  ~Executor() override;
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  std::string description() const override { return description_; }
  bool leaveDeviceMemory(uint64_t bytes) override {
    return vk::leaveDeviceMemory(vk_, physical_, bytes, held_);
  }
  bool threadSafe() const override { return true; }
  void run(const ModelCall& call) override;
  void release(std::string_view kind, const std::string& name) override;
  void setDefaultReleases(std::span<const DefaultRelease> releases) override {
    defaultReleases_.set(releases);
  }
  std::string leaked() override;

  /// What the op table holds of an operation besides its handler.
  struct OpExtra {
    /// Its calls let the layer retire finished work (a wait, a status or counter read), so it
    /// runs alone (retire_).
    bool retires = false;
  };
  using OpTable = kit::OpTable<Executor, OpExtra>;
  /// The op table, one row an operation of model/models/vulkan.model. Every kind overrides its
  /// default release: a leftover ends once the device is idle, without the oracle (releaseKind).
  static const OpTable& table();

 private:
  /// One row of the per-kind table: what ending an object of a kind of the model takes.
  struct Kind {
    std::string_view name;
    /// The Vulkan call that ends object `name`; empty for a void call, or for none (a command
    /// buffer or set its pool freed already).
    std::optional<VkResult> (*end)(Executor& executor, const std::string& name);
    /// The shadow's bookkeeping once the object has ended.
    void (Shadow::*forget)(const std::string& name);
    /// Whether the object can only end with its owner; null where it always can alone.
    bool (Shadow::*endsWithOwner)(const std::string& name) const = nullptr;
  };
  /// How many kinds the model has: the table test holds the per-kind table to the model's kinds.
  static constexpr std::size_t kKinds = 11;
  /// The per-kind table, owned kinds before their owners: the order zombies end in.
  static const std::array<Kind, kKinds>& kinds();
  /// The row of kind `name`; std::logic_error for a kind the model does not have.
  static const Kind& kind(std::string_view name);
  /// The end call of a kind whose objects each end by `Destroy` of the device, the handle and the
  /// allocation callbacks, or none where `callbacks` is false (a command pool: poolCreate says
  /// why).
  template <auto Objects, auto Destroy, bool callbacks = true>
  static std::optional<VkResult> destroy(Executor& e, const std::string& name) {
    (e.vk_.*Destroy)(e.device_, (e.shadow_.*Objects).named(name).handle,
                     callbacks ? e.alloc_ : nullptr);
    return std::nullopt;
  }

  /// Runs `handler` under retire_: alone if `retires`, else beside the other operations.
  void runOp(OpTable::Handler handler, bool retires, const ModelCall& call);
  /// The release overrides of the op table, one a kind of the per-kind table.
  template <std::size_t... K>
  static std::vector<OpTable::Override> releaseOverrides(std::index_sequence<K...>) {
    return {OpTable::Override{kinds()[K].name, &Executor::releaseKind<K>}...};
  }
  /// Releases leftover `name` of kinds()[K].
  template <std::size_t K>
  void releaseKind(const std::string& name) {
    releaseLeftover(kinds()[K], name);
  }
  /// Releases leftover `name` of `kind`: the device waited idle first, then its end call.
  void releaseLeftover(const Kind& kind, const std::string& name);

  void pickDevice(const std::string& wanted);
  void makeDevice();

  // The oracle of rules (VulkanOracle.cpp).
  /// Before a call that `breach` (if any) says is invalid: true when the executor refuses it
  /// itself, without the call (no layer, a freed handle, a use the layer misses); counted.
  bool guard(const char* call, const std::optional<Breach>& breach);
  /// After a call (`result` empty for a void call): true when the layer reported the predicted
  /// VUID and skipped the call, which is "refused as predicted" (counted). Throws InvalidUse for
  /// a layer message not predicted or a call not skipped; DeviceError for a predicted breach the
  /// layer did not report, then for a failed VkResult.
  bool check(const char* call, std::optional<VkResult> result, const std::optional<Breach>& breach,
             CallPoint point);
  /// Counts a refused call for this sequence's summary.
  void refusal(const char* call, const Breach& breach, bool byLayer);
  [[noreturn]] void fail(CallPoint point, const std::string& message);

  // Ending objects (VulkanOracle.cpp).
  /// An operation that ends `name` (of `kind`, the model's word): the call, then the shadow's
  /// bookkeeping; a refused end leaves a zombie (a freed handle's name is just forgotten).
  void end(std::string_view kind, const std::string& name, const char* call,
           const std::optional<Breach>& breach);
  /// The shadow's bookkeeping once `name` of `kind` has ended; it is no zombie any more.
  void forget(const Kind& kind, const std::string& name);
  /// Waits for the device once after the sequence's last operation (the release of leftovers
  /// and zombies needs nothing pending).
  void idleForEnd();
  /// Ends every zombie, owned objects before owners; the device is idle.
  void endZombies();
  /// After a zombie's end call: no layer message, no failed VkResult.
  void check(std::optional<VkResult> result, const std::string& zombie);
  /// Prints this sequence's refused calls (one line, when any) and starts the next tally.
  void summarize();
  /// Whether the layer misses what only copies use (before 1.3.292, Vulkan-ValidationLayers
  /// pull request 8309).
  bool copiesUnseen() const;

  // Locks (VulkanExecutor.cpp).
  /// The lock of command buffer `cmd`'s pool (taken before the executor's lock).
  std::unique_lock<std::mutex> lockPoolOf(const std::string& cmd);
  std::unique_lock<std::mutex> lockPool(const std::string& pool);
  std::unique_lock<std::mutex> lockDpoolOf(const std::string& set);
  std::unique_lock<std::mutex> lockDpool(const std::string& dpool);
  std::mutex& objectLock(const std::string& key);
  /// state_, taken outside the turns: a thread may hold it across a runtime call.
  std::unique_lock<std::mutex> lockState() { return lockOutsideTurns(state_); }

  CmdState& cmd(const std::string& name);

  // Command pools, command buffers and the queue (VulkanCommands.cpp).
  /// Command buffer `name`'s handle and the breach `predict` says a call on it makes, read
  /// together under the executor's lock.
  std::pair<VkCommandBuffer, std::optional<Breach>> predictOn(
      const std::string& name, std::optional<Breach> (Shadow::*predict)(const std::string&) const);
  /// Begins `name` when it is not recording (a record on it does so first), under the pool's lock.
  /// False when the begin was refused (as predicted), and the record with it.
  bool beginIfNeeded(const std::string& name, const char* call);
  /// Resets `name` when it is invalid, before a begin (the layer's view of it stays exact).
  void resetUnseenInvalid(const std::string& name);
  /// A full barrier after each recorded command: later commands, later submissions and host
  /// reads see its writes, so submissions take effect in queue order.
  void barrier(VkCommandBuffer commands);
  void submit(const ModelCall& call, const SubmitSync& sync);
  /// Before a submit of `cb` that is not executable: an initial one begins, a recording one ends.
  void recordForSubmit(CmdState& cb);
  /// Resets `fence` before a submit when a wait has seen it signalled; its handle, or null.
  VkFence resetSeenFence(const std::string& fence);

  // Waits (VulkanSync.cpp).
  /// The wait oracle: every fence submitted up to `through` signalled, every timeline at least at
  /// the value a submission up to `through` signals.
  void checkComplete(const char* call, uint64_t through);
  void waitIdle(bool device);
  /// The counter of timeline semaphore `handle`, asked of the runtime.
  uint64_t counter(VkSemaphore handle, const char* call);

  // Buffers and memory (VulkanResources.cpp).
  /// Binds `memory` to `buffer`; false when the bind was refused as predicted.
  bool bind(const std::string& buffer, const std::string& memory, const char* call);

  // The handlers, one an operation of the model.
  void poolCreate(const ModelCall& c);
  void poolReset(const ModelCall& c);
  void poolDestroy(const ModelCall& c);
  void cmdAllocate(const ModelCall& c);
  void cmdBegin(const ModelCall& c);
  void cmdEnd(const ModelCall& c);
  void cmdReset(const ModelCall& c);
  void cmdFree(const ModelCall& c);
  void cmdFill(const ModelCall& c);
  void cmdCopy(const ModelCall& c);
  void cmdDispatch(const ModelCall& c);
  void queueSubmit(const ModelCall& c) { submit(c, {}); }
  void queueSubmitFence(const ModelCall& c) { submit(c, {.fence = c.names[1]}); }
  void queueSubmitSignal(const ModelCall& c) { submit(c, {.signal = c.names[1]}); }
  void queueSubmitWait(const ModelCall& c) { submit(c, {.wait = c.names[1]}); }
  void queueSubmitTimeline(const ModelCall& c) {
    submit(c, {.timeline = c.names[1], .timelineWaits = c.names.subspan(2)});
  }
  void queueWaitIdle(const ModelCall&) { waitIdle(false); }
  void deviceWaitIdle(const ModelCall&) { waitIdle(true); }
  void fenceCreate(const ModelCall& c);
  void fenceWait(const ModelCall& c);
  void fenceStatus(const ModelCall& c);
  void fenceReset(const ModelCall& c);
  void fenceDestroy(const ModelCall& c);
  void semaphoreCreate(const ModelCall& c);
  void semaphoreDestroy(const ModelCall& c);
  void timelineCreate(const ModelCall& c);
  void timelineSignal(const ModelCall& c);
  void timelineWait(const ModelCall& c);
  void timelineValue(const ModelCall& c);
  void timelineDestroy(const ModelCall& c);
  void bufferCreate(const ModelCall& c);
  void bufferDestroy(const ModelCall& c);
  void memoryAllocate(const ModelCall& c);
  void memoryBind(const ModelCall& c);
  void memoryFree(const ModelCall& c);
  void memoryRead(const ModelCall& c);
  void dpoolCreate(const ModelCall& c);
  void dpoolReset(const ModelCall& c);
  void dpoolDestroy(const ModelCall& c);
  void setAllocate(const ModelCall& c);
  void setUpdate(const ModelCall& c);
  void setFree(const ModelCall& c);
  void layoutCreate(const ModelCall& c);
  void layoutDestroy(const ModelCall& c);
  void pipelineCreate(const ModelCall& c);
  void pipelineDestroy(const ModelCall& c);

  vk::ValidationMessages messages_{/*perThread=*/true};
  vk::Instance instance_;
  const vk::InstanceApi& vk_ = instance_.api;
  /// Every object of the model is made and destroyed with these: a `host-oom` mark fails the
  /// driver's own host allocation (VulkanAllocator.h).
  const VkAllocationCallbacks* alloc_ = vk::countingAllocator();
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  /// What --device-memory took, given back before the instance is destroyed.
  vk::HeldMemory held_;
  uint32_t family_ = 0;
  uint32_t memoryType_ = 0;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkShaderModule shader_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout_ = VK_NULL_HANDLE;
  std::string description_;

  /// The executor's lock: the shadow, and every call that submits, ends, waits or reads.
  std::mutex state_;
  /// Held shared by an operation from the shadow's prediction to its call, alone by one whose
  /// call lets the layer retire work: a wait on another thread between the two would make the
  /// layer see done what the shadow predicted pending.
  std::shared_mutex retire_;
  Shadow shadow_;
  /// A call failed: the destructor leaves everything to the process's exit.
  kit::FailureLatch failed_;
  /// What the runner says releases each kind; every kind overrides it (table()).
  kit::DefaultReleases defaultReleases_;
  /// Whether the device was waited idle since the last operation (the first release waits).
  std::atomic<bool> idleForRelease_ = false;

  /// GPUFUZZ_VULKAN_UNPREDICTED=VUID: the shadow forgets that rule, as a shadow with a gap would
  /// (a test of the oracle: the layer's report of it is then `invalid`).
  const std::string unpredicted_ = [] {
    const char* vuid = std::getenv("GPUFUZZ_VULKAN_UNPREDICTED");
    return std::string(vuid != nullptr ? vuid : "");
  }();

  /// This sequence's refused calls, for the summary line at its end.
  std::mutex tallyMutex_;
  std::vector<std::string> refusedByLayer_;
  std::vector<std::string> refusedByExecutor_;

  std::mutex locksMutex_;
  std::map<std::string, std::unique_ptr<std::mutex>> locks_;
};

}  // namespace gpufuzz::vulkan
