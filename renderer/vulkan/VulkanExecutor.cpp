// VulkanExecutor.cpp: the `vulkan` model's operations as Vulkan calls, checked by the layer.
#include "renderer/vulkan/VulkanExecutor.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <vector>

#include "renderer/Text.h"
#include "renderer/device/DeviceError.h"
#include "renderer/device/DeviceIndex.h"
#include "renderer/device/Turns.h"
#include "renderer/vulkan/LifecycleShader.h"
#include "renderer/vulkan/VulkanAllocator.h"
#include "renderer/vulkan/VulkanApi.h"
#include "renderer/vulkan/VulkanDeviceMemory.h"
#include "renderer/vulkan/VulkanPreload.h"
#include "renderer/vulkan/VulkanShadow.h"
#include "renderer/vulkan/VulkanValidation.h"

namespace gpufuzz {

namespace {

using vulkan::Breach;
using vulkan::CmdState;
using vulkan::Recorded;
using Phase = vulkan::CmdState::Phase;

/// Invocations per workgroup: local_size_x of Lifecycle.comp.
constexpr uint32_t kGroup = 64;
/// Sets and descriptors per descriptor pool: more than a sequence's operations can allocate, so
/// allocation never runs out (that would be VK_ERROR_OUT_OF_POOL_MEMORY, the pool's size).
constexpr uint32_t kSetsPerPool = 64;

/// Why the executor, not the layer, refuses a rule about a use the layer does not track.
constexpr const char* kUnseenUse =
    "the validation layer does not track this use: what vkCmdCopyBuffer uses, before 1.3.292 "
    "(corpus/runtimes/README.md), and a descriptor set bound for a dispatch it refused";

/// Thrown by guard() before any call of an operation whose predicted rule is about pending work
/// that the layer may have retired already: run() waits for the queue and runs it again.
struct Uncertain {};
/// How often an operation waits for the queue while other threads keep queueing work.
constexpr int kUncertainTries = 64;

/// Where a call's failure is said to happen (fault plans do not act on runtime models).
constexpr CallPoint kMake = CallPoint::BufAlloc;
constexpr CallPoint kEnd = CallPoint::BufFree;
constexpr CallPoint kRecord = CallPoint::Launch;
constexpr CallPoint kWait = CallPoint::Sync;
constexpr CallPoint kRead = CallPoint::CopyToHost;

class VulkanExecutor final : public ModelExecutor {
 public:
  explicit VulkanExecutor(const BackendOptions& options);
  ~VulkanExecutor() override;
  VulkanExecutor(const VulkanExecutor&) = delete;
  VulkanExecutor& operator=(const VulkanExecutor&) = delete;

  std::string description() const override { return description_; }
  bool leaveDeviceMemory(uint64_t bytes) override {
    return vk::leaveDeviceMemory(vk_, physical_, bytes, held_);
  }
  bool threadSafe() const override { return true; }
  void run(const ModelCall& call) override;
  void release(std::string_view kind, const std::string& name) override;
  std::string leaked() override;

 private:
  using Handler = void (VulkanExecutor::*)(const ModelCall&);
  /// An operation's handler; `retires`: its calls let the layer retire finished work (a wait, a
  /// status or counter read), so it runs alone (retire_).
  struct Op {
    Handler handler;
    bool retires = false;
  };
  static const std::map<std::string_view, Op>& handlers();
  /// Runs `handler` under retire_: alone if `retires`, else beside the other operations.
  void runOp(Handler handler, bool retires, const ModelCall& call);

  void pickDevice(const std::string& wanted);
  void makeDevice();

  // The oracle of rules.
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

  // Ending objects.
  /// An operation that ends `name` (of `kind`, the model's word): the call, then the shadow's
  /// bookkeeping; a refused end leaves a zombie (a freed handle's name is just forgotten).
  void end(const std::string& kind, const std::string& name, const char* call,
           const std::optional<Breach>& breach);
  /// The Vulkan call that ends `name`; empty for a void call (and for a command buffer or set
  /// freed with its pool: no call).
  std::optional<VkResult> endCall(const std::string& kind, const std::string& name);
  /// The shadow's bookkeeping once `name` has ended.
  void forget(const std::string& kind, const std::string& name);
  /// Waits for the device once after the sequence's last operation (the release of leftovers
  /// and zombies needs nothing pending).
  void idleForEnd();
  /// Ends every zombie, owned objects before owners; the device is idle.
  void endZombies();
  /// After a zombie's end call: no layer message, no failed VkResult.
  void check(std::optional<VkResult> result, const std::string& zombie);
  /// Prints this sequence's refused calls (one line, when any) and starts the next tally.
  void summarize();

  /// The lock of command buffer `cmd`'s pool (taken before the executor's lock).
  std::unique_lock<std::mutex> lockPoolOf(const std::string& cmd);
  std::unique_lock<std::mutex> lockPool(const std::string& pool);
  std::unique_lock<std::mutex> lockDpoolOf(const std::string& set);
  std::unique_lock<std::mutex> lockDpool(const std::string& dpool);
  std::mutex& objectLock(const std::string& key);
  /// state_, taken outside the turns: a thread may hold it across a runtime call.
  std::unique_lock<std::mutex> lockState() { return lockOutsideTurns(state_); }

  vulkan::CmdState& cmd(const std::string& name);
  /// Begins `name` when it is not recording (a record on it does so first), under the pool's lock.
  /// False when the begin was refused (as predicted), and the record with it.
  bool beginIfNeeded(const std::string& name, const char* call);
  /// Whether the layer takes `cb` for recording (it is, or went invalid unseen while it was).
  bool layerSeesRecording(const vulkan::CmdState& cb) const;
  /// Resets `name` when it is invalid, before a begin (the layer's view of it stays exact).
  void resetUnseenInvalid(const std::string& name);
  /// A full barrier after each recorded command: later commands, later submissions and host
  /// reads see its writes, so submissions take effect in queue order.
  void barrier(VkCommandBuffer commands);
  std::optional<Breach> unbound(const std::string& buffer, const std::string& vuid) const;
  void submit(const ModelCall& call, const std::string& fence, const std::string& signal,
              const std::string& wait, const std::string& timeline,
              std::span<const std::string> timelineWaits);
  /// The wait oracle: every fence submitted up to `through` signalled, every timeline at least at
  /// the value a submission up to `through` signals.
  void checkComplete(const char* call, uint64_t through);
  void waitIdle(bool device);

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
  void queueSubmit(const ModelCall& c) { submit(c, "", "", "", "", {}); }
  void queueSubmitFence(const ModelCall& c) { submit(c, c.names[1], "", "", "", {}); }
  void queueSubmitSignal(const ModelCall& c) { submit(c, "", c.names[1], "", "", {}); }
  void queueSubmitWait(const ModelCall& c) { submit(c, "", "", c.names[1], "", {}); }
  void queueSubmitTimeline(const ModelCall& c) {
    submit(c, "", "", "", c.names[1], c.names.subspan(2));
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

  /// Binds `memory` to `buffer`; false when the bind was refused as predicted.
  bool bind(const std::string& buffer, const std::string& memory, const char* call);
  /// Whether the layer misses what only copies use (before 1.3.292, Vulkan-ValidationLayers
  /// pull request 8309).
  bool copiesUnseen() const;
  /// Frees the sets of descriptor pool `dpool` (a reset or destroy did).
  void dropSets(vulkan::DpoolState& dpool);
  /// The highest submission that signals a value of `timeline` up to `value`.
  uint64_t signalledThrough(const vulkan::TimelineState& timeline, uint64_t value) const;
  /// The counter of timeline semaphore `handle`, asked of the runtime.
  uint64_t counter(VkSemaphore handle, const char* call);

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
  vulkan::Shadow shadow_;
  /// A call failed: the destructor leaves everything to the process's exit.
  std::atomic<bool> failed_ = false;
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

VulkanExecutor::VulkanExecutor(const BackendOptions& options) {
  preloadVulkanLibraries();
  instance_ = vk::makeInstance(vk::loader(), options.validation, messages_);
  try {
    pickDevice(options.device);
    makeDevice();
  } catch (...) {
    if (device_ != VK_NULL_HANDLE) vk_.vkDestroyDevice(device_, nullptr);
    instance_.destroy();
    throw;
  }
  description_ += instance_.validationText + "; one VkDevice for the process";
  shadow_.layerTracksCopies = !copiesUnseen();
  // Layer 1.4.309 on lavapipe 25.0.7 let the 11th free of a pending command buffer through
  // unreported: it had retired the finished submission before any wait (a 20-minute campaign,
  // corpus/runtimes/README.md). 1.3.239 retires only at waits and semaphore notifications. The
  // first release that retires on its own is not known, so every later layer counts as one.
  shadow_.layerRetiresOnItsOwn = instance_.layerVersion > VK_MAKE_API_VERSION(0, 1, 3, 239);
}

VulkanExecutor::~VulkanExecutor() {
  // After a failure the device may run or hold work that broke the rules: the process's exit
  // takes it, never a call that could block or crash.
  if (failed_) return;
  vk_.vkDeviceWaitIdle(device_);
  if (shader_ != VK_NULL_HANDLE) vk_.vkDestroyShaderModule(device_, shader_, nullptr);
  if (setLayout_ != VK_NULL_HANDLE) vk_.vkDestroyDescriptorSetLayout(device_, setLayout_, nullptr);
  vk_.vkDestroyDevice(device_, nullptr);
  held_.release(vk_);
  instance_.destroy();
}

void VulkanExecutor::pickDevice(const std::string& wanted) {
  uint32_t count = 0;
  VkResult result = vk_.vkEnumeratePhysicalDevices(instance_.instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  if (result == VK_SUCCESS)
    result = vk_.vkEnumeratePhysicalDevices(instance_.instance, &count, devices.data());
  if (result != VK_SUCCESS && result != VK_INCOMPLETE) {
    throw DeviceUnavailable("vkEnumeratePhysicalDevices: " + vk::resultName(result));
  }
  std::string seen;
  struct Candidate {
    VkPhysicalDevice device;
    uint32_t family;
    uint32_t memoryType;
    std::string description;
    bool gpu;
  };
  std::vector<Candidate> candidates;
  for (VkPhysicalDevice device : devices) {
    VkPhysicalDeviceDriverProperties driver{};
    driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
    VkPhysicalDeviceProperties2 properties{};
    properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    properties.pNext = &driver;
    vk_.vkGetPhysicalDeviceProperties2(device, &properties);
    const VkPhysicalDeviceProperties& p = properties.properties;
    seen += (seen.empty() ? "" : ", ") + std::string(p.deviceName);
    if (!wanted.empty() && !containsIgnoringCase(p.deviceName, wanted) &&
        !containsIgnoringCase(driver.driverName, wanted))
      continue;
    VkPhysicalDeviceVulkan12Features features12{};
    features12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    VkPhysicalDeviceFeatures2 features{};
    features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    features.pNext = &features12;
    vk_.vkGetPhysicalDeviceFeatures2(device, &features);
    uint32_t families = 0;
    vk_.vkGetPhysicalDeviceQueueFamilyProperties(device, &families, nullptr);
    std::vector<VkQueueFamilyProperties> queues(families);
    vk_.vkGetPhysicalDeviceQueueFamilyProperties(device, &families, queues.data());
    std::optional<uint32_t> compute;
    for (uint32_t i = 0; i < families && !compute; ++i) {
      if ((queues[i].queueFlags & VK_QUEUE_COMPUTE_BIT) != 0) compute = i;
    }
    VkPhysicalDeviceMemoryProperties memory{};
    vk_.vkGetPhysicalDeviceMemoryProperties(device, &memory);
    std::optional<uint32_t> hostVisible;
    constexpr VkMemoryPropertyFlags kHost =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t i = 0; i < memory.memoryTypeCount && !hostVisible; ++i) {
      if ((memory.memoryTypes[i].propertyFlags & kHost) == kHost) hostVisible = i;
    }
    if (!compute || !hostVisible || !features12.timelineSemaphore ||
        VK_API_VERSION_MINOR(p.apiVersion) < 2)
      continue;
    const bool gpu = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
                     p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
    candidates.push_back(Candidate{device, *compute, *hostVisible,
                                   std::string(p.deviceName) + ", driver " + driver.driverName +
                                       " " + driver.driverInfo + ", Vulkan " +
                                       vk::versionText(p.apiVersion),
                                   gpu});
  }
  // The GPU GPUFUZZ_DEVICE_INDEX names among the usable ones (DeviceIndex.h), else the first.
  std::vector<const Candidate*> gpus;
  for (const Candidate& c : candidates) {
    if (c.gpu) gpus.push_back(&c);
  }
  if (!candidates.empty()) {
    const Candidate& chosen =
        gpus.empty() ? candidates.front() : *gpus[deviceIndexAmong(gpus.size())];
    physical_ = chosen.device;
    family_ = chosen.family;
    memoryType_ = chosen.memoryType;
    description_ = chosen.description;
  }
  if (physical_ == VK_NULL_HANDLE) {
    throw DeviceUnavailable(
        devices.empty() ? "no Vulkan device (install mesa-vulkan-drivers for lavapipe)"
                        : "no Vulkan 1.2 device with a compute queue, host-visible coherent "
                          "memory and timeline semaphores" +
                              (wanted.empty() ? "" : " matches --device '" + wanted + "'") +
                              " (devices: " + seen + ")");
  }
}

void VulkanExecutor::makeDevice() {
  const float priority = 1.0F;
  VkDeviceQueueCreateInfo queue{};
  queue.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue.queueFamilyIndex = family_;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  VkPhysicalDeviceVulkan12Features features12{};
  features12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  features12.timelineSemaphore = VK_TRUE;
  VkDeviceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  info.pNext = &features12;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  const auto made = [this](const char* call, VkResult result) {
    if (messages_.take() || result != VK_SUCCESS) {
      throw DeviceUnavailable(std::string(call) + ": " + vk::resultName(result));
    }
  };
  made("vkCreateDevice", vk_.vkCreateDevice(physical_, &info, nullptr, &device_));
  vk_.vkGetDeviceQueue(device_, family_, 0, &queue_);

  VkShaderModuleCreateInfo shader{};
  shader.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  shader.codeSize = vulkan::kLifecycleSpirvSize;
  shader.pCode = reinterpret_cast<const uint32_t*>(vulkan::kLifecycleSpirv);
  made("vkCreateShaderModule", vk_.vkCreateShaderModule(device_, &shader, nullptr, &shader_));

  VkDescriptorSetLayoutBinding binding{};
  binding.binding = 0;
  binding.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  binding.descriptorCount = 1;
  binding.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  VkDescriptorSetLayoutCreateInfo layout{};
  layout.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  layout.bindingCount = 1;
  layout.pBindings = &binding;
  made("vkCreateDescriptorSetLayout",
       vk_.vkCreateDescriptorSetLayout(device_, &layout, nullptr, &setLayout_));
}

const std::map<std::string_view, VulkanExecutor::Op>& VulkanExecutor::handlers() {
  static const std::map<std::string_view, Op> table = {
      {"pool_create", {&VulkanExecutor::poolCreate}},
      {"pool_reset", {&VulkanExecutor::poolReset}},
      {"pool_destroy", {&VulkanExecutor::poolDestroy}},
      {"cmd_allocate", {&VulkanExecutor::cmdAllocate}},
      {"cmd_begin", {&VulkanExecutor::cmdBegin}},
      {"cmd_end", {&VulkanExecutor::cmdEnd}},
      {"cmd_reset", {&VulkanExecutor::cmdReset}},
      {"cmd_free", {&VulkanExecutor::cmdFree}},
      {"cmd_fill", {&VulkanExecutor::cmdFill}},
      {"cmd_copy", {&VulkanExecutor::cmdCopy}},
      {"cmd_dispatch", {&VulkanExecutor::cmdDispatch}},
      {"queue_submit", {&VulkanExecutor::queueSubmit}},
      {"queue_submit_fence", {&VulkanExecutor::queueSubmitFence}},
      {"queue_submit_signal", {&VulkanExecutor::queueSubmitSignal}},
      {"queue_submit_wait", {&VulkanExecutor::queueSubmitWait}},
      {"queue_submit_timeline", {&VulkanExecutor::queueSubmitTimeline}},
      {"queue_wait_idle", {&VulkanExecutor::queueWaitIdle, true}},
      {"device_wait_idle", {&VulkanExecutor::deviceWaitIdle, true}},
      {"fence_create", {&VulkanExecutor::fenceCreate}},
      {"fence_wait", {&VulkanExecutor::fenceWait, true}},
      {"fence_status", {&VulkanExecutor::fenceStatus, true}},
      {"fence_reset", {&VulkanExecutor::fenceReset}},
      {"fence_destroy", {&VulkanExecutor::fenceDestroy}},
      {"semaphore_create", {&VulkanExecutor::semaphoreCreate}},
      {"semaphore_destroy", {&VulkanExecutor::semaphoreDestroy}},
      {"timeline_create", {&VulkanExecutor::timelineCreate}},
      {"timeline_signal", {&VulkanExecutor::timelineSignal}},
      {"timeline_wait", {&VulkanExecutor::timelineWait, true}},
      {"timeline_value", {&VulkanExecutor::timelineValue, true}},
      {"timeline_destroy", {&VulkanExecutor::timelineDestroy}},
      {"buffer_create", {&VulkanExecutor::bufferCreate}},
      {"buffer_destroy", {&VulkanExecutor::bufferDestroy}},
      {"memory_allocate", {&VulkanExecutor::memoryAllocate}},
      {"memory_bind", {&VulkanExecutor::memoryBind}},
      {"memory_free", {&VulkanExecutor::memoryFree}},
      {"memory_read", {&VulkanExecutor::memoryRead}},
      {"dpool_create", {&VulkanExecutor::dpoolCreate}},
      {"dpool_reset", {&VulkanExecutor::dpoolReset}},
      {"dpool_destroy", {&VulkanExecutor::dpoolDestroy}},
      {"set_allocate", {&VulkanExecutor::setAllocate}},
      {"set_update", {&VulkanExecutor::setUpdate}},
      {"set_free", {&VulkanExecutor::setFree}},
      {"layout_create", {&VulkanExecutor::layoutCreate}},
      {"layout_destroy", {&VulkanExecutor::layoutDestroy}},
      {"pipeline_create", {&VulkanExecutor::pipelineCreate}},
      {"pipeline_destroy", {&VulkanExecutor::pipelineDestroy}},
  };
  return table;
}

void VulkanExecutor::run(const ModelCall& call) {
  const auto it = handlers().find(call.op);
  if (it == handlers().end()) {
    throw std::logic_error("model vulkan has no operation " + std::string(call.op));
  }
  const Op& op = it->second;
  idleForRelease_ = false;
  try {
    try {
      runOp(op.handler, op.retires, call);
    } catch (const Uncertain&) {
      // The layer retires work that waits for semaphores when their operations are
      // notified, which can be before a wait of the model shows it complete: whether it would
      // report this rule depends on timing. The executor waits for the queue first, which makes
      // the order defined (and the call valid), and runs the operation again. Another thread
      // may queue work between the wait and the call: then it waits again, so that no Uncertain
      // escapes the second call of a threaded run.
      for (int tries = 1;; ++tries) {
        runOp(&VulkanExecutor::queueWaitIdle, true, call);
        try {
          runOp(op.handler, op.retires, call);
          break;
        } catch (const Uncertain&) {
          if (tries == kUncertainTries) {
            throw std::logic_error(std::string(call.op) + ": other threads kept work pending " +
                                   "through " + std::to_string(tries) + " waits for the queue");
          }
        }
      }
    }
  } catch (...) {
    failed_ = true;
    throw;
  }
}

void VulkanExecutor::runOp(Handler handler, bool retires, const ModelCall& call) {
  if (retires) {
    const auto alone = lockOutsideTurns<std::unique_lock<std::shared_mutex>>(retire_);
    (this->*handler)(call);
  } else {
    const auto beside = lockOutsideTurns<std::shared_lock<std::shared_mutex>>(retire_);
    (this->*handler)(call);
  }
}

// ---- The oracle of rules ----

void VulkanExecutor::fail(CallPoint point, const std::string& message) {
  failed_ = true;
  throw DeviceError(point, message);
}

bool VulkanExecutor::guard(const char* call, const std::optional<Breach>& breach) {
  if (!breach || breach->vuid == unpredicted_) return false;
  if (breach->uncertain && instance_.validation) throw Uncertain{};
  if (breach->deadHandle || !instance_.validation || !breach->layerMisses.empty()) {
    refusal(call, *breach, false);
    return true;
  }
  return false;
}

bool VulkanExecutor::check(const char* call, std::optional<VkResult> result,
                           const std::optional<Breach>& predicted, CallPoint point) {
  const std::optional<Breach> breach =
      predicted && predicted->vuid == unpredicted_ ? std::nullopt : predicted;
  if (std::optional<vk::ValidationMessages::Error> error = messages_.take()) {
    const bool named = breach && (error->vuid == breach->vuid ||
                                  std::find(breach->also.begin(), breach->also.end(),
                                            error->vuid) != breach->also.end());
    // Skipped: a call that returns VkResult says so with VK_ERROR_VALIDATION_FAILED_EXT. A void
    // call returns early when a validate-phase check asks to skip, and every rule the shadow
    // predicts is checked there; a zombie's clean end at the sequence's end confirms it.
    const bool skipped = !result || *result == VK_ERROR_VALIDATION_FAILED_EXT;
    if (named && skipped) {
      refusal(call, *breach, true);
      return true;
    }
    failed_ = true;
    std::string text = std::string(call) + ": " +
                       (error->vuid.empty() ? "validation error" : error->vuid) + ": " +
                       error->message;
    if (!breach) {
      text += " (not predicted by the executor)";
    } else if (!named) {
      text += " (the executor predicted " + breach->vuid + ")";
    } else {
      text += " (the layer did not skip the call: it returned " + vk::resultName(*result) + ")";
    }
    throw InvalidUse(point, text);
  }
  if (breach) {
    fail(point, std::string(call) + ": the validation layer did not report " + breach->vuid + ": " +
                    breach->why + " (the call went through)");
  }
  if (result && *result != VK_SUCCESS)
    fail(point, std::string(call) + ": " + vk::resultName(*result));
  return false;
}

void VulkanExecutor::refusal(const char* call, const Breach& breach, bool byLayer) {
  const std::lock_guard lock(tallyMutex_);
  (byLayer ? refusedByLayer_ : refusedByExecutor_).push_back(std::string(call) + " " + breach.vuid);
}

bool VulkanExecutor::copiesUnseen() const {
  return instance_.layerVersion < VK_MAKE_API_VERSION(0, 1, 3, 292);
}

// ---- Locks ----

std::mutex& VulkanExecutor::objectLock(const std::string& key) {
  const std::lock_guard lock(locksMutex_);
  std::unique_ptr<std::mutex>& m = locks_[key];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

std::unique_lock<std::mutex> VulkanExecutor::lockPool(const std::string& pool) {
  return lockOutsideTurns(objectLock("pool " + pool));
}

std::unique_lock<std::mutex> VulkanExecutor::lockPoolOf(const std::string& name) {
  std::string pool;
  {
    const auto lock = lockState();
    pool = cmd(name).pool;
  }
  return lockPool(pool);
}

std::unique_lock<std::mutex> VulkanExecutor::lockDpool(const std::string& dpool) {
  return lockOutsideTurns(objectLock("dpool " + dpool));
}

std::unique_lock<std::mutex> VulkanExecutor::lockDpoolOf(const std::string& set) {
  std::string dpool;
  {
    const auto lock = lockState();
    dpool = shadow_.sets.at(set).dpool;
  }
  return lockDpool(dpool);
}

CmdState& VulkanExecutor::cmd(const std::string& name) {
  return shadow_.cmds.at(name);
}

// ---- Command pools and command buffers ----

/// A breach of a rule about pending work. Uncertain where the layer may have retired that work
/// already (Shadow::pendingUncertain).
/// `name`: the object in use, when the use is one the layer may not track (then the executor
/// refuses the call itself).
Breach inUse(const vulkan::Shadow& shadow, std::string vuid, std::string why,
             const std::string& name = {}) {
  Breach breach(std::move(vuid), std::move(why));
  breach.uncertain = shadow.pendingUncertain();
  if (!name.empty() && !shadow.layerSeesPendingUse(name)) breach.layerMisses = kUnseenUse;
  return breach;
}

void VulkanExecutor::poolCreate(const ModelCall& c) {
  VkCommandPoolCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  info.queueFamilyIndex = family_;
  // Every pool lets its command buffers be reset one by one: a record begins a buffer again.
  info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  VkCommandPool pool = VK_NULL_HANDLE;
  // No callbacks for pools: lavapipe 22.3.6 then frees, inside vkCmdPipelineBarrier, a block the
  // callbacks never gave (corpus/runtimes/README.md, not reduced).
  check("vkCreateCommandPool", vk_.vkCreateCommandPool(device_, &info, nullptr, &pool), {}, kMake);
  const auto lock = lockState();
  shadow_.pools[c.names[0]].handle = pool;
}

void VulkanExecutor::poolReset(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto poolLock = lockPool(name);
  const auto lock = lockState();
  vulkan::PoolState& pool = shadow_.pools.at(name);
  std::optional<Breach> breach;
  if (const vulkan::Submission* s = shadow_.pendingUse(name)) {
    breach = inUse(shadow_, "VUID-vkResetCommandPool-commandPool-00040",
                   "a command buffer of pool " + name + " is pending (submission " +
                       std::to_string(s->number) + ")");
  }
  if (guard("vkResetCommandPool", breach) ||
      check("vkResetCommandPool", vk_.vkResetCommandPool(device_, pool.handle, 0), breach, kEnd))
    return;
  for (const std::string& n : pool.cmds) {
    CmdState& cb = cmd(n);
    cb.phase = Phase::Initial;
    cb.commands.clear();
    cb.uses.clear();
    cb.layerUses.clear();
    cb.layerSeesInvalid = false;
    cb.submittedSinceBegin = false;
  }
}

void VulkanExecutor::poolDestroy(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto poolLock = lockPool(name);
  const auto lock = lockState();
  std::optional<Breach> breach;
  if (const vulkan::Submission* s = shadow_.pendingUse(name)) {
    breach = inUse(shadow_, "VUID-vkDestroyCommandPool-commandPool-00041",
                   "a command buffer of pool " + name + " is pending (submission " +
                       std::to_string(s->number) + ")");
  }
  end("pool", name, "vkDestroyCommandPool", breach);
}

void VulkanExecutor::cmdAllocate(const ModelCall& c) {
  const std::string& poolName = c.names[0];
  auto poolLock = lockPool(poolName);
  VkCommandBufferAllocateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  {
    const auto lock = lockState();
    info.commandPool = shadow_.pools.at(poolName).handle;
  }
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  check("vkAllocateCommandBuffers", vk_.vkAllocateCommandBuffers(device_, &info, &commands), {},
        kMake);
  const auto lock = lockState();
  CmdState& cb = shadow_.cmds[c.names[1]];
  cb.handle = commands;
  cb.pool = poolName;
  shadow_.pools.at(poolName).cmds.insert(c.names[1]);
}

/// A breach for a command buffer whose pool was destroyed: its handle is freed.
std::optional<Breach> freedCmd(const CmdState& cb, const std::string& name, const char* vuid) {
  if (!cb.freed) return std::nullopt;
  return Breach{vuid, "command buffer " + name + " was freed with its pool " + cb.pool, true};
}

/// A breach for recording into, beginning or resetting a command buffer that is pending.
std::optional<Breach> pendingCmd(const vulkan::Shadow& shadow, const CmdState& cb,
                                 const std::string& name, const char* vuid) {
  if (!shadow.pending(cb.lastSubmission)) return std::nullopt;
  return inUse(shadow, vuid,
               "command buffer " + name + " is pending (submission " +
                   std::to_string(cb.lastSubmission) + ")");
}

void VulkanExecutor::cmdBegin(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto poolLock = lockPoolOf(name);
  std::optional<Breach> breach;
  VkCommandBuffer handle = VK_NULL_HANDLE;
  {
    const auto lock = lockState();
    const CmdState& cb = cmd(name);
    handle = cb.handle;
    breach = freedCmd(cb, name, "VUID-vkBeginCommandBuffer-commandBuffer-parameter");
    if (!breach) {
      breach = pendingCmd(shadow_, cb, name, "VUID-vkBeginCommandBuffer-commandBuffer-00049");
    }
    if (!breach && cb.phase == Phase::Recording) {
      breach = Breach{"VUID-vkBeginCommandBuffer-commandBuffer-00049",
                      "command buffer " + name + " is recording already"};
    }
  }
  if (guard("vkBeginCommandBuffer", breach)) return;
  if (!breach) resetUnseenInvalid(name);
  const std::string_view usage = c.word("usage");
  const bool oneTime = usage == "one_time";
  const bool simultaneous = usage == "simultaneous";
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = oneTime        ? VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT
                : simultaneous ? VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT
                               : 0;
  if (check("vkBeginCommandBuffer", vk_.vkBeginCommandBuffer(handle, &begin), breach, kRecord))
    return;
  const auto lock = lockState();
  CmdState& cb = cmd(name);
  cb.phase = Phase::Recording;
  cb.commands.clear();
  cb.uses.clear();
  cb.layerUses.clear();
  cb.layerSeesInvalid = false;
  cb.oneTime = oneTime;
  cb.simultaneous = simultaneous;
  cb.submittedSinceBegin = false;
}

bool VulkanExecutor::beginIfNeeded(const std::string& name, const char* call) {
  std::optional<Breach> breach;
  VkCommandBuffer handle = VK_NULL_HANDLE;
  {
    const auto lock = lockState();
    const CmdState& cb = cmd(name);
    handle = cb.handle;
    breach = freedCmd(cb, name, "VUID-vkBeginCommandBuffer-commandBuffer-parameter");
    if (!breach && cb.phase == Phase::Recording) return true;
    if (!breach) {
      breach = pendingCmd(shadow_, cb, name, "VUID-vkBeginCommandBuffer-commandBuffer-00049");
    }
  }
  // Recording into a buffer that is not recording begins it first (a new recording, which
  // resets an executable or invalid one: every pool allows that), for simultaneous use, so that
  // submitting it again while it is pending is valid. A refused begin refuses the record too:
  // recording into a buffer that is not recording would break another rule.
  if (guard(call, breach)) return false;
  if (!breach) resetUnseenInvalid(name);
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
  if (check("vkBeginCommandBuffer", vk_.vkBeginCommandBuffer(handle, &begin), breach, kRecord))
    return false;
  const auto lock = lockState();
  CmdState& cb = cmd(name);
  cb.phase = Phase::Recording;
  cb.commands.clear();
  cb.uses.clear();
  cb.layerUses.clear();
  cb.layerSeesInvalid = false;
  cb.oneTime = false;
  cb.simultaneous = true;
  cb.submittedSinceBegin = false;
  return true;
}

bool VulkanExecutor::layerSeesRecording(const CmdState& cb) const {
  return cb.phase == Phase::Recording ||
         (cb.phase == Phase::Invalid && !cb.layerSeesInvalid && cb.invalidWhileRecording);
}

void VulkanExecutor::resetUnseenInvalid(const std::string& name) {
  const auto lock = lockState();
  const CmdState& cb = cmd(name);
  if (cb.phase != Phase::Invalid) return;
  // A begin resets an invalid buffer implicitly, but the layer does not always see it so:
  // - invalid by a use it does not track (a copy, before 1.3.292), it takes the buffer for
  //   recording or executable, and would report a begin of one recording;
  // - gone invalid while recording, the 1.3.239 layer begins it again without forgetting what
  //   it used, and reports those objects' ends at the next end or submit.
  // An explicit reset first is valid (the pool has the reset bit; it is not pending), and the
  // begin after it is clean for both.
  check("vkResetCommandBuffer", vk_.vkResetCommandBuffer(cb.handle, 0), {}, kRecord);
}

void VulkanExecutor::cmdEnd(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto poolLock = lockPoolOf(name);
  std::optional<Breach> breach;
  VkCommandBuffer handle = VK_NULL_HANDLE;
  {
    const auto lock = lockState();
    const CmdState& cb = cmd(name);
    handle = cb.handle;
    breach = freedCmd(cb, name, "VUID-vkEndCommandBuffer-commandBuffer-parameter");
    if (!breach && cb.phase != Phase::Recording) {
      breach = Breach{"VUID-vkEndCommandBuffer-commandBuffer-00059",
                      "command buffer " + name + " is not recording" +
                          (cb.phase == Phase::Invalid ? " (invalid: " + cb.invalidBecause + ")"
                                                      : std::string())};
      // The 1.3.239 layer names an invalid buffer's cause instead. One it does not see go invalid
      // while recording it still takes for recording: it would end it, unreported.
      if (cb.phase == Phase::Invalid) breach->also = cb.invalidIds;
      if (layerSeesRecording(cb)) breach->layerMisses = kUnseenUse;
    }
  }
  if (guard("vkEndCommandBuffer", breach) ||
      check("vkEndCommandBuffer", vk_.vkEndCommandBuffer(handle), breach, kRecord))
    return;
  const auto lock = lockState();
  cmd(name).phase = Phase::Executable;
}

void VulkanExecutor::cmdReset(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto poolLock = lockPoolOf(name);
  const auto lock = lockState();
  CmdState& cb = cmd(name);
  std::optional<Breach> breach =
      freedCmd(cb, name, "VUID-vkResetCommandBuffer-commandBuffer-parameter");
  if (!breach) {
    breach = pendingCmd(shadow_, cb, name, "VUID-vkResetCommandBuffer-commandBuffer-00045");
  }
  if (guard("vkResetCommandBuffer", breach) ||
      check("vkResetCommandBuffer", vk_.vkResetCommandBuffer(cb.handle, 0), breach, kEnd))
    return;
  cb.phase = Phase::Initial;
  cb.commands.clear();
  cb.uses.clear();
  cb.layerUses.clear();
  cb.layerSeesInvalid = false;
  cb.submittedSinceBegin = false;
}

void VulkanExecutor::cmdFree(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto poolLock = lockPoolOf(name);
  const auto lock = lockState();
  CmdState& cb = cmd(name);
  std::optional<Breach> breach =
      freedCmd(cb, name, "VUID-vkFreeCommandBuffers-pCommandBuffers-parameter");
  if (!breach) {
    breach = pendingCmd(shadow_, cb, name, "VUID-vkFreeCommandBuffers-pCommandBuffers-00047");
  }
  end("cmd", name, "vkFreeCommandBuffers", breach);
}

void VulkanExecutor::barrier(VkCommandBuffer commands) {
  VkMemoryBarrier all{};
  all.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  all.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  all.dstAccessMask =
      VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
  vk_.vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                           VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                           &all, 0, nullptr, 0, nullptr);
}

std::optional<Breach> VulkanExecutor::unbound(const std::string& buffer,
                                              const std::string& vuid) const {
  const vulkan::BufferState& b = shadow_.buffers.at(buffer);
  if (!b.memory.empty()) return std::nullopt;
  return Breach{vuid, "buffer " + buffer + " has no memory bound" +
                          (b.everBound ? " (its memory was freed)" : "")};
}

void VulkanExecutor::cmdFill(const ModelCall& c) {
  const std::string& name = c.names[0];
  const std::string& buffer = c.names[1];
  auto poolLock = lockPoolOf(name);
  if (!beginIfNeeded(name, "vkCmdFillBuffer")) return;
  // Recording runs under the executor's lock too: a free on another thread between the
  // shadow's look and the call would change what the layer sees the command use.
  const auto lock = lockState();
  std::optional<Breach> breach;
  VkCommandBuffer handle = VK_NULL_HANDLE;
  VkBuffer target = VK_NULL_HANDLE;
  {
    handle = cmd(name).handle;
    target = shadow_.buffers.at(buffer).handle;
    breach = unbound(buffer, "VUID-vkCmdFillBuffer-dstBuffer-00031");
  }
  const auto value = static_cast<uint32_t>(c.arg("value"));
  if (guard("vkCmdFillBuffer", breach)) return;
  vk_.vkCmdFillBuffer(handle, target, 0, VK_WHOLE_SIZE, value);
  if (check("vkCmdFillBuffer", std::nullopt, breach, kRecord)) return;
  barrier(handle);
  shadow_.record(cmd(name), Recorded{Recorded::Kind::Fill, buffer, "", value, false});
}

void VulkanExecutor::cmdCopy(const ModelCall& c) {
  const std::string& name = c.names[0];
  const std::string& src = c.names[1];
  const std::string& dst = c.names[2];
  auto poolLock = lockPoolOf(name);
  if (!beginIfNeeded(name, "vkCmdCopyBuffer")) return;
  // Recording runs under the executor's lock too: a free on another thread between the
  // shadow's look and the call would change what the layer sees the command use.
  const auto lock = lockState();
  std::optional<Breach> breach;
  VkCommandBuffer handle = VK_NULL_HANDLE;
  VkBuffer from = VK_NULL_HANDLE, to = VK_NULL_HANDLE;
  VkBufferCopy region{0, 0, 0};
  {
    handle = cmd(name).handle;
    const vulkan::BufferState& s = shadow_.buffers.at(src);
    const vulkan::BufferState& d = shadow_.buffers.at(dst);
    from = s.handle;
    to = d.handle;
    region.size = std::min(s.size, d.size);
    breach = unbound(src, "VUID-vkCmdCopyBuffer-srcBuffer-00119");
    if (!breach) breach = unbound(dst, "VUID-vkCmdCopyBuffer-dstBuffer-00121");
    if (breach && !s.boundTo.empty() && s.boundTo == d.boundTo) {
      // Both were bound to one memory, since freed: layer 1.4.309 reports the overlap first.
      breach->also.push_back("VUID-vkCmdCopyBuffer-pRegions-00117");
    }
    if (!breach && s.memory == d.memory) {
      breach = Breach{"VUID-vkCmdCopyBuffer-pRegions-00117",
                      "buffers " + src + " and " + dst + " are bound to the same memory " +
                          s.memory + ", so the copy's regions overlap in memory"};
    }
  }
  if (guard("vkCmdCopyBuffer", breach)) return;
  vk_.vkCmdCopyBuffer(handle, from, to, 1, &region);
  if (check("vkCmdCopyBuffer", std::nullopt, breach, kRecord)) return;
  barrier(handle);
  shadow_.record(cmd(name), Recorded{Recorded::Kind::Copy, dst, src, 0, false});
}

void VulkanExecutor::cmdDispatch(const ModelCall& c) {
  const std::string& name = c.names[0];
  const std::string& pipelineName = c.names[1];
  const std::string& setName = c.names[2];
  auto poolLock = lockPoolOf(name);
  std::optional<Breach> breach;
  {
    const auto lock = lockState();
    const vulkan::SetState& set = shadow_.sets.at(setName);
    const vulkan::PipelineState& pipeline = shadow_.pipelines.at(pipelineName);
    if (set.freed) {
      breach = Breach{"VUID-vkCmdBindDescriptorSets-pDescriptorSets-parameter",
                      "descriptor set " + setName + " was freed with its pool " + set.dpool, true};
    } else if (shadow_.layouts.count(pipeline.layout) == 0) {
      breach = Breach{
          "VUID-vkCmdBindDescriptorSets-layout-parameter",
          "pipeline layout " + pipeline.layout + " of pipeline " + pipelineName + " was destroyed",
          true};
    }
  }
  if (guard("vkCmdBindDescriptorSets", breach) || !beginIfNeeded(name, "vkCmdDispatch")) return;
  // Recording runs under the executor's lock too: a free on another thread between the
  // shadow's look and the call would change what the layer sees the command use.
  const auto lock = lockState();
  VkCommandBuffer handle = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;
  uint64_t words = 0;
  std::string buffer;
  bool xorOp = false;
  {
    handle = cmd(name).handle;
    const vulkan::PipelineState& p = shadow_.pipelines.at(pipelineName);
    pipeline = p.handle;
    xorOp = p.xorOp;
    layout = shadow_.layouts.at(p.layout).handle;
    const vulkan::SetState& s = shadow_.sets.at(setName);
    set = s.handle;
    buffer = s.buffer;
    const auto b = shadow_.buffers.find(s.buffer);
    if (s.buffer.empty()) {
      breach = Breach{"VUID-vkCmdDispatch-None-02699",
                      "descriptor set " + setName + " was never written (set_update)"};
    } else if (b == shadow_.buffers.end()) {
      breach =
          Breach{"VUID-vkCmdDispatch-None-02699",
                 "the buffer " + s.buffer + " of descriptor set " + setName + " was destroyed"};
    } else {
      words = b->second.size / 4;
      breach = unbound(s.buffer, "VUID-vkCmdDispatch-None-02699");
    }
    // Layer 1.4.309 names a descriptor unwritten or of a destroyed buffer 08114.
    if (breach) breach->also.push_back("VUID-vkCmdDispatch-None-08114");
  }
  const auto value = static_cast<uint32_t>(c.arg("value"));
  if (guard("vkCmdDispatch", breach)) return;
  vk_.vkCmdBindPipeline(handle, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  vk_.vkCmdBindDescriptorSets(handle, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0,
                              nullptr);
  vk_.vkCmdPushConstants(handle, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof value, &value);
  const auto groups = static_cast<uint32_t>(std::max<uint64_t>(1, (words + kGroup - 1) / kGroup));
  vk_.vkCmdDispatch(handle, groups, 1, 1);
  const bool refused = check("vkCmdDispatch", std::nullopt, breach, kRecord);
  if (!refused) barrier(handle);
  CmdState& cb = cmd(name);
  const vulkan::PipelineState& p = shadow_.pipelines.at(pipelineName);
  if (refused) {
    // The binds before a refused dispatch were made. The layer tracks the bound pipeline, not the
    // set and its pool (it adds them to the command buffer at a dispatch): the executor refuses
    // what breaks a rule through them (lavapipe crashes on a bound set freed before a submit).
    vulkan::Shadow::use(cb, pipelineName);
    for (const std::string& used : {p.layout, setName, shadow_.sets.at(setName).dpool})
      cb.uses.insert(used);
    return;
  }
  for (const std::string& used : {pipelineName, p.layout, setName, shadow_.sets.at(setName).dpool})
    vulkan::Shadow::use(cb, used);
  shadow_.record(cb, Recorded{Recorded::Kind::Dispatch, buffer, "", value, xorOp});
}

// ---- The queue ----

void VulkanExecutor::submit(const ModelCall& call, const std::string& fence,
                            const std::string& signal, const std::string& wait,
                            const std::string& timeline,
                            std::span<const std::string> timelineWaits) {
  const std::string& name = call.names[0];
  auto poolLock = lockPoolOf(name);
  const auto lock = lockState();
  CmdState& cb = cmd(name);
  std::optional<Breach> breach = freedCmd(cb, name, "VUID-VkSubmitInfo-pCommandBuffers-parameter");
  if (!breach) {
    if (!cb.simultaneous) {
      breach = pendingCmd(shadow_, cb, name, "VUID-vkQueueSubmit-pCommandBuffers-00071");
    }
  }
  if (!breach && cb.phase == Phase::Invalid) {
    breach = Breach{"VUID-vkQueueSubmit-pCommandBuffers-00070",
                    "command buffer " + name + " is invalid: " + cb.invalidBecause};
    breach->also = cb.invalidIds;
    if (!cb.layerSeesInvalid) breach->layerMisses = kUnseenUse;
  }
  // What the command buffer breaks decides whether it is recorded first.
  const bool cmdFine = !breach;
  // The sync objects' rules. The layer reports the first rule it checks (the fence first in
  // 1.3.239), so each rule the submit breaks is a prediction it may report.
  std::vector<Breach> sync;
  if (!fence.empty() && shadow_.pending(shadow_.fences.at(fence).submission)) {
    sync.push_back(inUse(shadow_, "VUID-vkQueueSubmit-fence-00064",
                         "fence " + fence + " is still pending from submission " +
                             std::to_string(shadow_.fences.at(fence).submission)));
  }
  if (!signal.empty() && shadow_.semaphores.at(signal).signalled) {
    sync.emplace_back("VUID-vkQueueSubmit-pSignalSemaphores-00067",
                      "binary semaphore " + signal + " is signalled and not yet waited on");
    sync.back().also.push_back("UNASSIGNED-CoreValidation-DrawState-QueueForwardProgress");
  }
  if (!wait.empty() && !shadow_.semaphores.at(wait).signalled) {
    sync.emplace_back("VUID-vkQueueSubmit-pWaitSemaphores-03238",
                      "binary semaphore " + wait + " has no signal operation submitted to wait on");
  }
  for (const Breach& other : sync) {
    if (!breach) {
      breach = other;
      continue;
    }
    breach->why += "; and " + other.why + " (" + other.vuid + ")";
    breach->also.push_back(other.vuid);
    breach->also.insert(breach->also.end(), other.also.begin(), other.also.end());
    breach->uncertain = breach->uncertain || other.uncertain;
  }
  if (guard("vkQueueSubmit", breach)) return;
  // A submit of a command buffer that is not executable records it first: an initial one
  // begins (and so is empty), a recording one ends.
  if (cmdFine && cb.phase != Phase::Executable) {
    if (cb.phase == Phase::Initial) {
      VkCommandBufferBeginInfo begin{};
      begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
      begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
      check("vkBeginCommandBuffer", vk_.vkBeginCommandBuffer(cb.handle, &begin), {}, kRecord);
      cb.oneTime = false;
      cb.simultaneous = true;
      cb.submittedSinceBegin = false;
      // Begun: an end that fails leaves it recording, for the layer as for the shadow.
      cb.phase = Phase::Recording;
    }
    check("vkEndCommandBuffer", vk_.vkEndCommandBuffer(cb.handle), {}, kRecord);
    cb.phase = Phase::Executable;
  }
  // A fence a wait has seen signalled is reset first, even for a submit the layer will refuse
  // (else the layer would report that instead); one still pending is the rule above.
  VkFence fenceHandle = VK_NULL_HANDLE;
  if (!fence.empty()) {
    vulkan::FenceState& f = shadow_.fences.at(fence);
    fenceHandle = f.handle;
    if (f.signalled) {
      check("vkResetFences", vk_.vkResetFences(device_, 1, &f.handle), {}, kRecord);
      f.signalled = false;
      f.submission = 0;
    }
  }
  std::vector<VkSemaphore> signals, waits;
  std::vector<uint64_t> signalValues, waitValues;
  std::vector<VkPipelineStageFlags> stages;
  std::set<std::string> extra{cb.pool};
  if (!signal.empty()) {
    signals.push_back(shadow_.semaphores.at(signal).handle);
    signalValues.push_back(0);
    extra.insert(signal);
  }
  if (!wait.empty()) {
    waits.push_back(shadow_.semaphores.at(wait).handle);
    waitValues.push_back(0);
    stages.push_back(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
    extra.insert(wait);
  }
  uint64_t timelineValue = 0;
  if (!timeline.empty()) {
    timelineValue = shadow_.timelines.at(timeline).promised + 1;
    signals.push_back(shadow_.timelines.at(timeline).handle);
    signalValues.push_back(timelineValue);
    extra.insert(timeline);
  }
  // A timeline is waited for at the value last promised, which an earlier submission or the
  // host signals, so the queue never waits for a signal that nothing will send.
  for (const std::string& t : timelineWaits) {
    waits.push_back(shadow_.timelines.at(t).handle);
    waitValues.push_back(shadow_.timelines.at(t).promised);
    stages.push_back(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
    extra.insert(t);
  }
  if (!fence.empty()) extra.insert(fence);
  VkTimelineSemaphoreSubmitInfo values{};
  values.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
  values.waitSemaphoreValueCount = static_cast<uint32_t>(waitValues.size());
  values.pWaitSemaphoreValues = waitValues.data();
  values.signalSemaphoreValueCount = static_cast<uint32_t>(signalValues.size());
  values.pSignalSemaphoreValues = signalValues.data();
  VkSubmitInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  if (!timeline.empty() || !timelineWaits.empty()) info.pNext = &values;
  info.waitSemaphoreCount = static_cast<uint32_t>(waits.size());
  info.pWaitSemaphores = waits.data();
  info.pWaitDstStageMask = stages.data();
  info.commandBufferCount = 1;
  info.pCommandBuffers = &cb.handle;
  info.signalSemaphoreCount = static_cast<uint32_t>(signals.size());
  info.pSignalSemaphores = signals.data();
  if (check("vkQueueSubmit", vk_.vkQueueSubmit(queue_, 1, &info, fenceHandle), breach, kRecord))
    return;

  const uint64_t number = shadow_.submit(cb, extra, !wait.empty() || !timelineWaits.empty());
  if (!fence.empty()) shadow_.fences.at(fence).submission = number;
  if (!signal.empty()) shadow_.semaphores.at(signal).signalled = true;
  if (!wait.empty()) shadow_.semaphores.at(wait).signalled = false;
  if (!timeline.empty()) {
    vulkan::TimelineState& t = shadow_.timelines.at(timeline);
    t.promised = timelineValue;
    t.signals[timelineValue] = number;
  }
}

void VulkanExecutor::checkComplete(const char* call, uint64_t through) {
  std::vector<std::pair<const vulkan::TimelineState*, uint64_t>> reachedNow;
  for (const auto& [name, fence] : shadow_.fences) {
    if (fence.submission == 0 || fence.submission > through) continue;
    const VkResult status = vk_.vkGetFenceStatus(device_, fence.handle);
    check("vkGetFenceStatus", status == VK_NOT_READY ? VK_SUCCESS : status, {}, kWait);
    if (status == VK_NOT_READY) {
      fail(kWait, std::string(call) + " returned while fence " + name + " of submission " +
                      std::to_string(fence.submission) + " is VK_NOT_READY");
    }
  }
  for (const auto& [name, timeline] : shadow_.timelines) {
    uint64_t owed = 0;
    for (const auto& [value, submission] : timeline.signals) {
      if (submission <= through) owed = std::max(owed, value);
    }
    if (owed == 0) continue;
    const uint64_t value = counter(timeline.handle, "vkGetSemaphoreCounterValue");
    if (value < owed) {
      fail(kWait, std::string(call) + " returned while timeline " + name + " is at " +
                      std::to_string(value) + ", below the value " + std::to_string(owed) +
                      " a submission before it signals");
    }
    reachedNow.emplace_back(&timeline, value);
  }
  // The layer retires the work that signals a value a counter read showed reached (it may be
  // beyond what the wait waited for): so does the shadow.
  for (const auto& [timeline, value] : reachedNow)
    shadow_.complete(signalledThrough(*timeline, value));
}

uint64_t VulkanExecutor::counter(VkSemaphore handle, const char* call) {
  uint64_t value = 0;
  check(call, vk_.vkGetSemaphoreCounterValue(device_, handle, &value), {}, kWait);
  return value;
}

void VulkanExecutor::waitIdle(bool device) {
  const auto lock = lockState();
  const char* call = device ? "vkDeviceWaitIdle" : "vkQueueWaitIdle";
  check(call, device ? vk_.vkDeviceWaitIdle(device_) : vk_.vkQueueWaitIdle(queue_), {}, kWait);
  shadow_.completeAll();
  checkComplete(call, shadow_.lastSubmission());
}

// ---- Fences and semaphores ----

void VulkanExecutor::fenceCreate(const ModelCall& c) {
  const bool signalled = c.word("signalled") == "yes";
  VkFenceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  info.flags = signalled ? VK_FENCE_CREATE_SIGNALED_BIT : 0;
  VkFence fence = VK_NULL_HANDLE;
  check("vkCreateFence", vk_.vkCreateFence(device_, &info, alloc_, &fence), {}, kMake);
  const auto lock = lockState();
  shadow_.fences[c.names[0]] = vulkan::FenceState{fence, signalled, 0};
}

void VulkanExecutor::fenceWait(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  vulkan::FenceState& f = shadow_.fences.at(name);
  if (!f.signalled && f.submission == 0) {
    // Nothing will signal it: a wait without a timeout would never return, so the executor asks
    // with a timeout of 0, and the answer must be VK_TIMEOUT.
    const VkResult result = vk_.vkWaitForFences(device_, 1, &f.handle, VK_TRUE, 0);
    check("vkWaitForFences", result == VK_TIMEOUT ? VK_SUCCESS : result, {}, kWait);
    if (result != VK_TIMEOUT) {
      fail(kWait, "vkWaitForFences: " + vk::resultName(result) + " for fence " + name +
                      ", which was never submitted nor made signalled (expected VK_TIMEOUT)");
    }
    return;
  }
  check("vkWaitForFences", vk_.vkWaitForFences(device_, 1, &f.handle, VK_TRUE, UINT64_MAX), {},
        kWait);
  // The wait returned: the fence is signalled for the layer, whatever the check below finds.
  if (f.submission != 0) shadow_.complete(f.submission);
  f.signalled = true;
  const VkResult status = vk_.vkGetFenceStatus(device_, f.handle);
  if (status != VK_SUCCESS) {
    fail(kWait, "vkWaitForFences returned while fence " + name + " is " + vk::resultName(status) +
                    " (vkGetFenceStatus)");
  }
  checkComplete("vkWaitForFences", f.submission);
}

void VulkanExecutor::fenceStatus(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  vulkan::FenceState& f = shadow_.fences.at(name);
  const VkResult status = vk_.vkGetFenceStatus(device_, f.handle);
  check("vkGetFenceStatus", status == VK_NOT_READY ? VK_SUCCESS : status, {}, kWait);
  if (f.signalled && status != VK_SUCCESS) {
    fail(kWait, "vkGetFenceStatus: " + vk::resultName(status) + " for fence " + name +
                    ", which is signalled (a wait saw it, or it was made so)");
  }
  if (!f.signalled && f.submission == 0 && status != VK_NOT_READY) {
    fail(kWait, "vkGetFenceStatus: " + vk::resultName(status) + " for fence " + name +
                    ", which was never submitted nor made signalled");
  }
  // A fence seen signalled completes its submission, for the layer as for the executor.
  if (status == VK_SUCCESS && f.submission != 0) shadow_.complete(f.submission);
}

void VulkanExecutor::fenceReset(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  vulkan::FenceState& f = shadow_.fences.at(name);
  std::optional<Breach> breach;
  if (shadow_.pending(f.submission)) {
    breach =
        inUse(shadow_, "VUID-vkResetFences-pFences-01123",
              "fence " + name + " is pending (submission " + std::to_string(f.submission) + ")");
  }
  if (guard("vkResetFences", breach) ||
      check("vkResetFences", vk_.vkResetFences(device_, 1, &f.handle), breach, kEnd))
    return;
  f.signalled = false;
  f.submission = 0;
}

void VulkanExecutor::fenceDestroy(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  const vulkan::FenceState& f = shadow_.fences.at(name);
  std::optional<Breach> breach;
  if (shadow_.pending(f.submission)) {
    breach =
        inUse(shadow_, "VUID-vkDestroyFence-fence-01120",
              "fence " + name + " is pending (submission " + std::to_string(f.submission) + ")");
  }
  end("fence", name, "vkDestroyFence", breach);
}

void VulkanExecutor::semaphoreCreate(const ModelCall& c) {
  VkSemaphoreCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
  VkSemaphore semaphore = VK_NULL_HANDLE;
  check("vkCreateSemaphore", vk_.vkCreateSemaphore(device_, &info, alloc_, &semaphore), {}, kMake);
  const auto lock = lockState();
  shadow_.semaphores[c.names[0]].handle = semaphore;
}

/// The breach of destroying semaphore `name` while a pending submission signals or waits on it.
std::optional<Breach> semaphoreInUse(const vulkan::Shadow& shadow, const std::string& name) {
  const vulkan::Submission* s = shadow.pendingUse(name);
  if (s == nullptr) return std::nullopt;
  // Layers 1.3.239 and 1.4.309 name the rule 05149; 01137 is its number in older registries.
  Breach breach =
      inUse(shadow, "VUID-vkDestroySemaphore-semaphore-05149",
            "semaphore " + name + " is used by pending submission " + std::to_string(s->number));
  breach.also.push_back("VUID-vkDestroySemaphore-semaphore-01137");
  return breach;
}

void VulkanExecutor::semaphoreDestroy(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  end("semaphore", name, "vkDestroySemaphore", semaphoreInUse(shadow_, name));
}

void VulkanExecutor::timelineCreate(const ModelCall& c) {
  VkSemaphoreTypeCreateInfo type{};
  type.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type.initialValue = 0;
  VkSemaphoreCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
  info.pNext = &type;
  VkSemaphore semaphore = VK_NULL_HANDLE;
  check("vkCreateSemaphore", vk_.vkCreateSemaphore(device_, &info, alloc_, &semaphore), {}, kMake);
  const auto lock = lockState();
  shadow_.timelines[c.names[0]].handle = semaphore;
}

uint64_t VulkanExecutor::signalledThrough(const vulkan::TimelineState& timeline,
                                          uint64_t value) const {
  uint64_t through = 0;
  for (const auto& [v, submission] : timeline.signals) {
    if (v <= value) through = std::max(through, submission);
  }
  return through;
}

void VulkanExecutor::timelineSignal(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  vulkan::TimelineState& t = shadow_.timelines.at(name);
  std::optional<Breach> breach;
  for (const auto& [value, submission] : t.signals) {
    if (!shadow_.pending(submission)) continue;
    breach = inUse(shadow_, "VUID-VkSemaphoreSignalInfo-value-03259",
                   "the host signals timeline " + name + " to " + std::to_string(t.promised + 1) +
                       " while submission " + std::to_string(submission) + " will signal " +
                       std::to_string(value));
    break;
  }
  if (guard("vkSignalSemaphore", breach)) return;
  VkSemaphoreSignalInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO;
  info.semaphore = t.handle;
  info.value = t.promised + 1;
  if (check("vkSignalSemaphore", vk_.vkSignalSemaphore(device_, &info), breach, kWait)) return;
  t.promised = info.value;
  t.reached = info.value;
}

void VulkanExecutor::timelineWait(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  vulkan::TimelineState& t = shadow_.timelines.at(name);
  VkSemaphoreWaitInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
  info.semaphoreCount = 1;
  info.pSemaphores = &t.handle;
  info.pValues = &t.promised;
  check("vkWaitSemaphores", vk_.vkWaitSemaphores(device_, &info, UINT64_MAX), {}, kWait);
  // A wait that returned saw the value reached, and the layer retires the work that signals it
  // then: so does the shadow, before the read below, which a mark may fail.
  t.reached = std::max(t.reached, t.promised);
  shadow_.complete(signalledThrough(t, t.promised));
  const uint64_t value = counter(t.handle, "vkGetSemaphoreCounterValue");
  if (value < t.promised) {
    fail(kWait, "vkWaitSemaphores returned while timeline " + name + " is at " +
                    std::to_string(value) + ", below the value " + std::to_string(t.promised) +
                    " it waited for");
  }
  t.reached = std::max(t.reached, value);
  // The layer retires the work that signals a value the counter read showed reached.
  shadow_.complete(signalledThrough(t, value));
}

void VulkanExecutor::timelineValue(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  vulkan::TimelineState& t = shadow_.timelines.at(name);
  const uint64_t value = counter(t.handle, "vkGetSemaphoreCounterValue");
  if (value < t.reached || value > t.promised) {
    fail(kWait, "vkGetSemaphoreCounterValue: timeline " + name + " is at " + std::to_string(value) +
                    ", outside " + std::to_string(t.reached) + ".." + std::to_string(t.promised) +
                    " (reached .. signalled so far)");
  }
  t.reached = value;
  // The layer retires the work that signals a value the counter has reached.
  shadow_.complete(signalledThrough(t, value));
}

void VulkanExecutor::timelineDestroy(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  end("timeline", name, "vkDestroySemaphore", semaphoreInUse(shadow_, name));
}

// ---- Buffers and memory ----

void VulkanExecutor::bufferCreate(const ModelCall& c) {
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = c.arg("size");
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  check("vkCreateBuffer", vk_.vkCreateBuffer(device_, &info, alloc_, &buffer), {}, kMake);
  VkMemoryRequirements needs{};
  vk_.vkGetBufferMemoryRequirements(device_, buffer, &needs);
  const auto lock = lockState();
  vulkan::BufferState& b = shadow_.buffers[c.names[0]];
  b.handle = buffer;
  b.size = info.size;
  b.required = needs.size;
  b.memoryTypes = needs.memoryTypeBits;
}

void VulkanExecutor::bufferDestroy(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  std::optional<Breach> breach;
  if (const vulkan::Submission* s = shadow_.pendingUse(name)) {
    breach = inUse(shadow_, "VUID-vkDestroyBuffer-buffer-00922",
                   "buffer " + name + " is used by pending submission " + std::to_string(s->number),
                   name);
  }
  end("buffer", name, "vkDestroyBuffer", breach);
}

bool VulkanExecutor::bind(const std::string& buffer, const std::string& memory, const char* call) {
  vulkan::BufferState& b = shadow_.buffers.at(buffer);
  vulkan::MemoryState& m = shadow_.memories.at(memory);
  std::optional<Breach> breach;
  if (b.everBound) {
    breach = Breach{"VUID-vkBindBufferMemory-buffer-07459",
                    "buffer " + buffer + " was bound to memory before"};
    breach->also.push_back("VUID-vkBindBufferMemory-buffer-01029");
  } else if (m.size < b.required) {
    breach = Breach{"VUID-vkBindBufferMemory-size-01037",
                    "memory " + memory + " has " + std::to_string(m.size) + " bytes, buffer " +
                        buffer + " needs " + std::to_string(b.required)};
  }
  if (guard(call, breach) ||
      check(call, vk_.vkBindBufferMemory(device_, b.handle, m.handle, 0), breach, kMake))
    return false;
  b.memory = memory;
  b.boundTo = memory;
  b.everBound = true;
  m.buffers.insert(buffer);
  return true;
}

void VulkanExecutor::memoryAllocate(const ModelCall& c) {
  const std::string& buffer = c.names[0];
  const std::string& name = c.names[1];
  VkMemoryAllocateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  info.memoryTypeIndex = memoryType_;
  {
    const auto lock = lockState();
    info.allocationSize = shadow_.buffers.at(buffer).required;
  }
  VkDeviceMemory memory = VK_NULL_HANDLE;
  check("vkAllocateMemory", vk_.vkAllocateMemory(device_, &info, alloc_, &memory), {}, kMake);
  const auto lock = lockState();
  vulkan::MemoryState& m = shadow_.memories[name];
  m.handle = memory;
  m.size = info.allocationSize;
  m.bytes.assign(m.size, -1);
  // Allocated for the buffer and bound to it at once, the way most programs bind. A refused bind
  // leaves the memory allocated and unbound: later uses of its name stay defined. A failed bind
  // fails the operation, whose memory was then never made: it is freed here.
  try {
    bind(buffer, name, "vkBindBufferMemory");
  } catch (const InvalidUse&) {
    throw;
  } catch (const DeviceError&) {
    vk_.vkFreeMemory(device_, memory, alloc_);
    shadow_.memories.erase(name);
    throw;
  }
}

void VulkanExecutor::memoryBind(const ModelCall& c) {
  const auto lock = lockState();
  bind(c.names[0], c.names[1], "vkBindBufferMemory");
}

void VulkanExecutor::memoryFree(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  std::optional<Breach> breach;
  if (const vulkan::Submission* s = shadow_.pendingUse(name)) {
    breach = inUse(shadow_, "VUID-vkFreeMemory-memory-00677",
                   "memory " + name + " is used by pending submission " + std::to_string(s->number),
                   name);
  }
  end("memory", name, "vkFreeMemory", breach);
}

void VulkanExecutor::memoryRead(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  const vulkan::MemoryState& m = shadow_.memories.at(name);
  void* mapped = nullptr;
  check("vkMapMemory", vk_.vkMapMemory(device_, m.handle, 0, VK_WHOLE_SIZE, 0, &mapped), {}, kRead);
  const auto* bytes = static_cast<const uint8_t*>(mapped);
  // Bytes a pending submission writes are the device's until a wait: only the others are known.
  std::optional<uint64_t> wrong;
  for (uint64_t i = shadow_.settledFrom(name); i < m.size && !wrong; ++i) {
    if (m.bytes[i] >= 0 && bytes[i] != m.bytes[i]) wrong = i;
  }
  const uint8_t seen = wrong ? bytes[*wrong] : 0;
  vk_.vkUnmapMemory(device_, m.handle);
  check("vkUnmapMemory", VK_SUCCESS, {}, kRead);
  if (wrong) {
    failed_ = true;
    char text[160];
    std::snprintf(text, sizeof text, "memory %s byte %llu is 0x%02x, the operations wrote 0x%02x",
                  name.c_str(), static_cast<unsigned long long>(*wrong), seen,
                  static_cast<unsigned>(m.bytes[*wrong]));
    throw DataMismatch(text);
  }
}

// ---- Descriptor pools and sets ----

void VulkanExecutor::dpoolCreate(const ModelCall& c) {
  const bool freeSets = c.word("free_sets") == "yes";
  const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool};
  VkDescriptorPoolCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  info.flags = freeSets ? VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT : 0;
  info.maxSets = kSetsPerPool;
  info.poolSizeCount = 1;
  info.pPoolSizes = &size;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  check("vkCreateDescriptorPool", vk_.vkCreateDescriptorPool(device_, &info, alloc_, &pool), {},
        kMake);
  const auto lock = lockState();
  vulkan::DpoolState& d = shadow_.dpools[c.names[0]];
  d.handle = pool;
  d.freeSets = freeSets;
}

void VulkanExecutor::dropSets(vulkan::DpoolState& dpool) {
  for (const std::string& s : dpool.sets) {
    shadow_.sets.at(s).freed = true;
    shadow_.invalidateUsers(s, "descriptor set " + s + " it binds was freed with its pool",
                            "VkDescriptorSet");
  }
  dpool.sets.clear();
}

/// The breach of resetting or destroying descriptor pool `name` while its sets are in use.
std::optional<Breach> dpoolInUse(const vulkan::Shadow& shadow, const std::string& name,
                                 const char* vuid) {
  const vulkan::Submission* s = shadow.pendingUse(name);
  if (s == nullptr) return std::nullopt;
  return inUse(shadow, vuid,
               "a descriptor set of pool " + name + " is used by pending submission " +
                   std::to_string(s->number),
               name);
}

void VulkanExecutor::dpoolReset(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto dpoolLock = lockDpool(name);
  const auto lock = lockState();
  vulkan::DpoolState& d = shadow_.dpools.at(name);
  const std::optional<Breach> breach =
      dpoolInUse(shadow_, name, "VUID-vkResetDescriptorPool-descriptorPool-00313");
  if (guard("vkResetDescriptorPool", breach) ||
      check("vkResetDescriptorPool", vk_.vkResetDescriptorPool(device_, d.handle, 0), breach, kEnd))
    return;
  dropSets(d);
}

void VulkanExecutor::dpoolDestroy(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto dpoolLock = lockDpool(name);
  const auto lock = lockState();
  end("dpool", name, "vkDestroyDescriptorPool",
      dpoolInUse(shadow_, name, "VUID-vkDestroyDescriptorPool-descriptorPool-00303"));
}

void VulkanExecutor::setAllocate(const ModelCall& c) {
  const std::string& dpool = c.names[0];
  auto dpoolLock = lockDpool(dpool);
  VkDescriptorSetAllocateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  {
    const auto lock = lockState();
    info.descriptorPool = shadow_.dpools.at(dpool).handle;
  }
  info.descriptorSetCount = 1;
  info.pSetLayouts = &setLayout_;
  VkDescriptorSet set = VK_NULL_HANDLE;
  check("vkAllocateDescriptorSets", vk_.vkAllocateDescriptorSets(device_, &info, &set), {}, kMake);
  const auto lock = lockState();
  vulkan::SetState& s = shadow_.sets[c.names[1]];
  s.handle = set;
  s.dpool = dpool;
  shadow_.dpools.at(dpool).sets.insert(c.names[1]);
}

void VulkanExecutor::setUpdate(const ModelCall& c) {
  const std::string& name = c.names[0];
  const std::string& buffer = c.names[1];
  const auto lock = lockState();
  vulkan::SetState& s = shadow_.sets.at(name);
  std::optional<Breach> breach;
  if (s.freed) {
    breach = Breach{"VUID-VkWriteDescriptorSet-dstSet-parameter",
                    "descriptor set " + name + " was freed with its pool " + s.dpool, true};
  } else if (const vulkan::Submission* p = shadow_.pendingUse(name)) {
    breach = inUse(
        shadow_, "VUID-vkUpdateDescriptorSets-None-03047",
        "descriptor set " + name + " is used by pending submission " + std::to_string(p->number),
        name);
  } else {
    breach = unbound(buffer, "VUID-VkWriteDescriptorSet-descriptorType-00329");
  }
  if (guard("vkUpdateDescriptorSets", breach)) return;
  const VkDescriptorBufferInfo target{shadow_.buffers.at(buffer).handle, 0, VK_WHOLE_SIZE};
  VkWriteDescriptorSet write{};
  write.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
  write.dstSet = s.handle;
  write.dstBinding = 0;
  write.descriptorCount = 1;
  write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  write.pBufferInfo = &target;
  vk_.vkUpdateDescriptorSets(device_, 1, &write, 0, nullptr);
  if (check("vkUpdateDescriptorSets", std::nullopt, breach, kRecord)) return;
  shadow_.invalidateUsers(name, "descriptor set " + name + " it binds was updated",
                          "VkDescriptorSet");
  s.buffer = buffer;
}

void VulkanExecutor::setFree(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto dpoolLock = lockDpoolOf(name);
  const auto lock = lockState();
  const vulkan::SetState& s = shadow_.sets.at(name);
  std::optional<Breach> breach;
  if (s.freed) {
    breach = Breach{"VUID-vkFreeDescriptorSets-pDescriptorSets-parameter",
                    "descriptor set " + name + " was freed with its pool " + s.dpool, true};
  } else if (!shadow_.dpools.at(s.dpool).freeSets) {
    breach = Breach{"VUID-vkFreeDescriptorSets-descriptorPool-00312",
                    "descriptor pool " + s.dpool + " was made without the free-set bit"};
  } else if (const vulkan::Submission* p = shadow_.pendingUse(name)) {
    breach = inUse(
        shadow_, "VUID-vkFreeDescriptorSets-pDescriptorSets-00309",
        "descriptor set " + name + " is used by pending submission " + std::to_string(p->number),
        name);
  }
  end("set", name, "vkFreeDescriptorSets", breach);
}

// ---- Pipeline layouts and pipelines ----

void VulkanExecutor::layoutCreate(const ModelCall& c) {
  const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(uint32_t)};
  VkPipelineLayoutCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  info.setLayoutCount = 1;
  info.pSetLayouts = &setLayout_;
  info.pushConstantRangeCount = 1;
  info.pPushConstantRanges = &push;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  check("vkCreatePipelineLayout", vk_.vkCreatePipelineLayout(device_, &info, alloc_, &layout), {},
        kMake);
  const auto lock = lockState();
  shadow_.layouts[c.names[0]].handle = layout;
}

void VulkanExecutor::layoutDestroy(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  std::optional<Breach> breach;
  for (const auto& [cmdName, cb] : shadow_.cmds) {
    if (cb.freed || cb.phase != Phase::Recording || cb.uses.count(name) == 0) continue;
    // The layer has no check of this rule: 1.3.239 does not report it, nor does its source of
    // 2026-08 (corpus/runtimes/README.md). The call is made all the same, so the outcome is
    // `error` (the layer missed it): the destroy does no harm before the buffer is submitted,
    // and nothing is submitted after a failure.
    breach =
        Breach{"VUID-vkDestroyPipelineLayout-pipelineLayout-02004",
               "command buffer " + cmdName + " that is recording used pipeline layout " + name};
    break;
  }
  end("layout", name, "vkDestroyPipelineLayout", breach);
}

void VulkanExecutor::pipelineCreate(const ModelCall& c) {
  const std::string& layoutName = c.names[0];
  const bool xorOp = c.word("op") == "xor";
  const uint32_t op = xorOp ? 1 : 0;
  const VkSpecializationMapEntry entry{0, 0, sizeof op};
  VkSpecializationInfo special{};
  special.mapEntryCount = 1;
  special.pMapEntries = &entry;
  special.dataSize = sizeof op;
  special.pData = &op;
  VkComputePipelineCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = shader_;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = &special;
  {
    const auto lock = lockState();
    info.layout = shadow_.layouts.at(layoutName).handle;
  }
  VkPipeline pipeline = VK_NULL_HANDLE;
  check("vkCreateComputePipelines",
        vk_.vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &info, alloc_, &pipeline), {},
        kMake);
  const auto lock = lockState();
  shadow_.pipelines[c.names[1]] = vulkan::PipelineState{pipeline, layoutName, xorOp};
}

void VulkanExecutor::pipelineDestroy(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  std::optional<Breach> breach;
  if (const vulkan::Submission* s = shadow_.pendingUse(name)) {
    breach =
        inUse(shadow_, "VUID-vkDestroyPipeline-pipeline-00765",
              "pipeline " + name + " is used by pending submission " + std::to_string(s->number));
  }
  end("pipeline", name, "vkDestroyPipeline", breach);
}

// ---- Ending objects, zombies and the release ----

void VulkanExecutor::end(const std::string& kind, const std::string& name, const char* call,
                         const std::optional<Breach>& breach) {
  bool refused = guard(call, breach);
  if (!refused) refused = check(call, endCall(kind, name), breach, kEnd);
  if (refused && !breach->deadHandle) {
    // Refused as predicted: the object lives on, and pending work may use it. The sequence's
    // name is dead; the executor ends the handle at the sequence's end, once the device is idle.
    shadow_.zombies.emplace(name, kind);
    return;
  }
  // Ended, or a handle that its pool freed already: the name goes.
  forget(kind, name);
}

std::optional<VkResult> VulkanExecutor::endCall(const std::string& kind, const std::string& name) {
  if (kind == "fence") {
    vk_.vkDestroyFence(device_, shadow_.fences.at(name).handle, alloc_);
  } else if (kind == "semaphore") {
    vk_.vkDestroySemaphore(device_, shadow_.semaphores.at(name).handle, alloc_);
  } else if (kind == "timeline") {
    vk_.vkDestroySemaphore(device_, shadow_.timelines.at(name).handle, alloc_);
  } else if (kind == "cmd") {
    CmdState& cb = cmd(name);
    if (!cb.freed)
      vk_.vkFreeCommandBuffers(device_, shadow_.pools.at(cb.pool).handle, 1, &cb.handle);
  } else if (kind == "pool") {
    vk_.vkDestroyCommandPool(device_, shadow_.pools.at(name).handle, nullptr);
  } else if (kind == "set") {
    const vulkan::SetState& s = shadow_.sets.at(name);
    if (!s.freed) {
      return vk_.vkFreeDescriptorSets(device_, shadow_.dpools.at(s.dpool).handle, 1, &s.handle);
    }
  } else if (kind == "dpool") {
    vk_.vkDestroyDescriptorPool(device_, shadow_.dpools.at(name).handle, alloc_);
  } else if (kind == "pipeline") {
    vk_.vkDestroyPipeline(device_, shadow_.pipelines.at(name).handle, alloc_);
  } else if (kind == "layout") {
    vk_.vkDestroyPipelineLayout(device_, shadow_.layouts.at(name).handle, alloc_);
  } else if (kind == "memory") {
    vk_.vkFreeMemory(device_, shadow_.memories.at(name).handle, alloc_);
  } else if (kind == "buffer") {
    vk_.vkDestroyBuffer(device_, shadow_.buffers.at(name).handle, alloc_);
  } else {
    throw std::logic_error("model vulkan has no kind " + kind);
  }
  return std::nullopt;
}

void VulkanExecutor::forget(const std::string& kind, const std::string& name) {
  shadow_.zombies.erase(name);
  if (kind == "fence") {
    shadow_.fences.erase(name);
  } else if (kind == "semaphore") {
    shadow_.semaphores.erase(name);
  } else if (kind == "timeline") {
    shadow_.timelines.erase(name);
  } else if (kind == "cmd") {
    const CmdState& cb = cmd(name);
    if (!cb.freed) shadow_.pools.at(cb.pool).cmds.erase(name);
    shadow_.cmds.erase(name);
  } else if (kind == "pool") {
    // Its command buffers are freed with it; their names stay, with dead handles.
    for (const std::string& n : shadow_.pools.at(name).cmds)
      cmd(n).freed = true;
    shadow_.pools.erase(name);
  } else if (kind == "set") {
    const vulkan::SetState& s = shadow_.sets.at(name);
    if (!s.freed) {
      shadow_.invalidateUsers(name, "descriptor set " + name + " it binds was freed",
                              "VkDescriptorSet");
      shadow_.dpools.at(s.dpool).sets.erase(name);
    }
    shadow_.sets.erase(name);
  } else if (kind == "dpool") {
    dropSets(shadow_.dpools.at(name));
    shadow_.dpools.erase(name);
  } else if (kind == "pipeline") {
    shadow_.invalidateUsers(name, "pipeline " + name + " it binds was destroyed", "VkPipeline");
    shadow_.pipelines.erase(name);
  } else if (kind == "layout") {
    shadow_.layouts.erase(name);
  } else if (kind == "memory") {
    shadow_.invalidateUsers(name, "memory " + name + " bound to a buffer it uses was freed",
                            "VkDeviceMemory");
    for (const std::string& b : shadow_.memories.at(name).buffers)
      shadow_.buffers.at(b).memory.clear();
    shadow_.memories.erase(name);
  } else if (kind == "buffer") {
    shadow_.invalidateUsers(name, "buffer " + name + " it uses was destroyed", "VkBuffer");
    const vulkan::BufferState& b = shadow_.buffers.at(name);
    if (!b.memory.empty()) shadow_.memories.at(b.memory).buffers.erase(name);
    shadow_.buffers.erase(name);
  }
}

void VulkanExecutor::idleForEnd() {
  // What is left may still be in use by pending work: waiting for the device makes every end
  // after it valid (the model's leftovers and zombies are not its breaches).
  if (idleForRelease_) return;
  check("vkDeviceWaitIdle", vk_.vkDeviceWaitIdle(device_), {}, kWait);
  shadow_.completeAll();
  checkComplete("vkDeviceWaitIdle", shadow_.lastSubmission());
  idleForRelease_ = true;
}

void VulkanExecutor::endZombies() {
  // Owned objects before their owners; a pipeline's layout is never a zombie.
  for (const char* kind : {"cmd", "set", "pipeline", "fence", "semaphore", "timeline", "pool",
                           "dpool", "layout", "memory", "buffer"}) {
    std::vector<std::string> names;
    for (const auto& [name, k] : shadow_.zombies) {
      if (k == kind) names.push_back(name);
    }
    for (const std::string& name : names) {
      // A set of a pool without the free-set bit cannot be freed alone: its pool's end frees it.
      const bool alone = std::string_view(kind) != "set" || shadow_.sets.at(name).freed ||
                         shadow_.dpools.at(shadow_.sets.at(name).dpool).freeSets;
      if (alone) check(endCall(kind, name), name);
      forget(kind, name);
    }
  }
}

void VulkanExecutor::check(std::optional<VkResult> result, const std::string& zombie) {
  // The layer refused this object's end earlier. Had that call gone through, ending the handle
  // now would be a second end, which the layer reports: then the refusal was not real.
  if (std::optional<vk::ValidationMessages::Error> error = messages_.take()) {
    fail(kEnd, "ending " + zombie + ", whose end the layer refused as predicted earlier: " +
                   error->vuid + ": " + error->message +
                   " (the refused call went through, or the zombie was ended twice)");
  }
  if (result && *result != VK_SUCCESS) {
    fail(kEnd,
         "ending " + zombie + ", whose end the layer refused earlier: " + vk::resultName(*result));
  }
}

void VulkanExecutor::release(std::string_view kind, const std::string& name) {
  const auto lock = lockState();
  try {
    idleForEnd();
    const std::string k(kind);
    const bool loneSet = k == "set" && !shadow_.sets.at(name).freed &&
                         !shadow_.dpools.at(shadow_.sets.at(name).dpool).freeSets;
    // A set of a pool without the free-set bit goes with the pool.
    if (!loneSet) check("release", endCall(k, name), {}, kEnd);
    forget(k, name);
  } catch (...) {
    failed_ = true;
    throw;
  }
}

std::string VulkanExecutor::leaked() {
  const auto lock = lockState();
  try {
    if (!shadow_.zombies.empty()) {
      idleForEnd();
      endZombies();
    }
  } catch (...) {
    failed_ = true;
    throw;
  }
  summarize();
  const std::string alive = shadow_.alive();
  if (!alive.empty()) return "the sequence's release left " + alive + " alive on the device";
  // Every object made with the callbacks is destroyed: what the driver still holds through them
  // it kept past its objects' destroy, an error path's leak as the CTS's alloc_callback_fail sees.
  if (const int64_t held = vk::liveHostAllocations(); held != 0) {
    return "the driver still holds " + std::to_string(held) +
           " host allocations made through the objects' allocation callbacks, every object "
           "destroyed";
  }
  return {};
}

void VulkanExecutor::summarize() {
  const std::lock_guard lock(tallyMutex_);
  const std::size_t layer = refusedByLayer_.size(), own = refusedByExecutor_.size();
  if (layer + own != 0) {
    const auto list = [](const std::vector<std::string>& calls) {
      std::string text;
      for (const std::string& call : calls)
        text += (text.empty() ? ": " : ", ") + call;
      return text;
    };
    std::string line = "vulkan: " + std::to_string(layer) +
                       " operations refused by the layer as predicted" + list(refusedByLayer_);
    if (own != 0) {
      line += "; " + std::to_string(own) + " refused by the executor" + list(refusedByExecutor_);
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  // GPUFUZZ_VULKAN_TALLY=FILE: one line a sequence, appended, so a campaign's children can be
  // counted (tests/renderer/vulkan/campaign.sh): the two counts, then the VUIDs the layer refused.
  if (const char* tally = std::getenv("GPUFUZZ_VULKAN_TALLY")) {
    if (FILE* out = std::fopen(tally, "a")) {
      std::string calls;
      for (const std::string& call : refusedByLayer_)
        calls += " " + call.substr(call.find(' ') + 1);
      std::fprintf(out, "refused-by-layer %zu refused-by-executor %zu%s\n", layer, own,
                   calls.c_str());
      std::fclose(out);
    }
  }
  refusedByLayer_.clear();
  refusedByExecutor_.clear();
}

}  // namespace

std::unique_ptr<ModelExecutor> makeVulkanExecutor(std::string_view model,
                                                  const BackendOptions& options) {
  if (model != "vulkan") {
    throw std::logic_error("the vulkan backend executes model vulkan, not " + std::string(model));
  }
  return std::make_unique<VulkanExecutor>(options);
}

}  // namespace gpufuzz
