// VulkanExecutor.cpp: the `vulkan` model's executor: its instance and device, the op table, run()
// and the locks of external synchronization (VulkanExecutorImpl.h names the other files).
#include "renderer/vulkan/VulkanExecutor.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <vector>

#include "renderer/Text.h"
#include "renderer/device/DeviceError.h"
#include "renderer/device/DeviceIndex.h"
#include "renderer/vulkan/LifecycleShader.h"
#include "renderer/vulkan/VulkanExecutorImpl.h"
#include "renderer/vulkan/VulkanPreload.h"

namespace gpufuzz {

namespace vulkan {

Executor::Executor(const BackendOptions& options) {
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
  // bench/RESULTS.md). 1.3.239 retires only at waits and semaphore notifications. The first
  // release that retires on its own is not known, so every later layer counts as one.
  shadow_.layerRetiresOnItsOwn = instance_.layerVersion > VK_MAKE_API_VERSION(0, 1, 3, 239);
}

Executor::~Executor() {
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

void Executor::pickDevice(const std::string& wanted) {
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

void Executor::makeDevice() {
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
  shader.codeSize = kLifecycleSpirvSize;
  shader.pCode = reinterpret_cast<const uint32_t*>(kLifecycleSpirv);
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

std::span<const Executor::Op> Executor::ops() {
  // The model's operations in its file's order; a test holds the two to the same names.
  static constexpr auto table = std::to_array<Op>({
      {"pool_create", &Executor::poolCreate},
      {"pool_reset", &Executor::poolReset},
      {"pool_destroy", &Executor::poolDestroy},
      {"cmd_allocate", &Executor::cmdAllocate},
      {"cmd_begin", &Executor::cmdBegin},
      {"cmd_end", &Executor::cmdEnd},
      {"cmd_reset", &Executor::cmdReset},
      {"cmd_free", &Executor::cmdFree},
      {"cmd_fill", &Executor::cmdFill},
      {"cmd_copy", &Executor::cmdCopy},
      {"cmd_dispatch", &Executor::cmdDispatch},
      {"queue_submit", &Executor::queueSubmit},
      {"queue_submit_fence", &Executor::queueSubmitFence},
      {"queue_submit_signal", &Executor::queueSubmitSignal},
      {"queue_submit_wait", &Executor::queueSubmitWait},
      {"queue_submit_timeline", &Executor::queueSubmitTimeline},
      {"queue_wait_idle", &Executor::queueWaitIdle, true},
      {"device_wait_idle", &Executor::deviceWaitIdle, true},
      {"fence_create", &Executor::fenceCreate},
      {"fence_wait", &Executor::fenceWait, true},
      {"fence_status", &Executor::fenceStatus, true},
      {"fence_reset", &Executor::fenceReset},
      {"fence_destroy", &Executor::fenceDestroy},
      {"semaphore_create", &Executor::semaphoreCreate},
      {"semaphore_destroy", &Executor::semaphoreDestroy},
      {"timeline_create", &Executor::timelineCreate},
      {"timeline_signal", &Executor::timelineSignal},
      {"timeline_wait", &Executor::timelineWait, true},
      {"timeline_value", &Executor::timelineValue, true},
      {"timeline_destroy", &Executor::timelineDestroy},
      {"buffer_create", &Executor::bufferCreate},
      {"buffer_destroy", &Executor::bufferDestroy},
      {"memory_allocate", &Executor::memoryAllocate},
      {"memory_bind", &Executor::memoryBind},
      {"memory_free", &Executor::memoryFree},
      {"memory_read", &Executor::memoryRead},
      {"dpool_create", &Executor::dpoolCreate},
      {"dpool_reset", &Executor::dpoolReset},
      {"dpool_destroy", &Executor::dpoolDestroy},
      {"set_allocate", &Executor::setAllocate},
      {"set_update", &Executor::setUpdate},
      {"set_free", &Executor::setFree},
      {"layout_create", &Executor::layoutCreate},
      {"layout_destroy", &Executor::layoutDestroy},
      {"pipeline_create", &Executor::pipelineCreate},
      {"pipeline_destroy", &Executor::pipelineDestroy},
  });
  return table;
}

void Executor::run(const ModelCall& call) {
  const std::span<const Op> table = ops();
  const auto it =
      std::find_if(table.begin(), table.end(), [&](const Op& op) { return op.name == call.op; });
  if (it == table.end()) {
    throw std::logic_error("model vulkan has no operation " + std::string(call.op));
  }
  const Op& op = *it;
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
        runOp(&Executor::queueWaitIdle, true, call);
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

void Executor::runOp(Handler handler, bool retires, const ModelCall& call) {
  if (retires) {
    const auto alone = lockOutsideTurns<std::unique_lock<std::shared_mutex>>(retire_);
    (this->*handler)(call);
  } else {
    const auto beside = lockOutsideTurns<std::shared_lock<std::shared_mutex>>(retire_);
    (this->*handler)(call);
  }
}

// ---- Locks ----

std::mutex& Executor::objectLock(const std::string& key) {
  const std::lock_guard lock(locksMutex_);
  std::unique_ptr<std::mutex>& m = locks_[key];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

std::unique_lock<std::mutex> Executor::lockPool(const std::string& pool) {
  return lockOutsideTurns(objectLock("pool " + pool));
}

std::unique_lock<std::mutex> Executor::lockPoolOf(const std::string& name) {
  std::string pool;
  {
    const auto lock = lockState();
    pool = cmd(name).pool;
  }
  return lockPool(pool);
}

std::unique_lock<std::mutex> Executor::lockDpool(const std::string& dpool) {
  return lockOutsideTurns(objectLock("dpool " + dpool));
}

std::unique_lock<std::mutex> Executor::lockDpoolOf(const std::string& set) {
  std::string dpool;
  {
    const auto lock = lockState();
    dpool = shadow_.sets.at(set).dpool;
  }
  return lockDpool(dpool);
}

CmdState& Executor::cmd(const std::string& name) {
  return shadow_.cmds.at(name);
}

}  // namespace vulkan

std::unique_ptr<ModelExecutor> makeVulkanExecutor(std::string_view model,
                                                  const BackendOptions& options) {
  if (model != "vulkan") {
    throw std::logic_error("the vulkan backend executes model vulkan, not " + std::string(model));
  }
  return std::make_unique<vulkan::Executor>(options);
}

std::vector<std::string_view> vulkanExecutorOperations() {
  std::vector<std::string_view> names;
  for (const vulkan::Executor::Op& op : vulkan::Executor::ops())
    names.push_back(op.name);
  return names;
}

std::vector<std::string_view> vulkanExecutorKinds() {
  std::vector<std::string_view> names;
  for (const vulkan::Executor::Kind& kind : vulkan::Executor::kinds())
    names.push_back(kind.name);
  return names;
}

}  // namespace gpufuzz
