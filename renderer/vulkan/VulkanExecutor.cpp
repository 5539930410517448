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
  // corpus/runtimes/README.md). 1.3.239 retires only at waits and semaphore notifications. The
  // first release that retires on its own is not known, so every later layer counts as one.
  shadow_.layerRetiresOnItsOwn = instance_.layerVersion > VK_MAKE_API_VERSION(0, 1, 3, 239);
}

Executor::~Executor() {
  // After a failure the device may run or hold work that broke the rules: the process's exit
  // takes it, never a call that could block or crash.
  if (failed_.tripped()) return;
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

const Executor::OpTable& Executor::table() {
  using E = Executor;
  // The model's operations in its file's order; a test holds the two to the same names.
  static const OpTable table{
      kOwner,
      "vulkan",
      {
          {"pool_create", &E::poolCreate},
          {"pool_reset", &E::poolReset},
          {"pool_destroy", &E::poolDestroy},
          {"cmd_allocate", &E::cmdAllocate},
          {"cmd_begin", &E::cmdBegin},
          {"cmd_end", &E::cmdEnd},
          {"cmd_reset", &E::cmdReset},
          {"cmd_free", &E::cmdFree},
          {"cmd_fill", &E::cmdFill},
          {"cmd_copy", &E::cmdCopy},
          {"cmd_dispatch", &E::cmdDispatch},
          {"queue_submit", &E::queueSubmit},
          {"queue_submit_fence", &E::queueSubmitFence},
          {"queue_submit_signal", &E::queueSubmitSignal},
          {"queue_submit_wait", &E::queueSubmitWait},
          {"queue_submit_timeline", &E::queueSubmitTimeline},
          {"queue_wait_idle", &E::queueWaitIdle, {true}},
          {"device_wait_idle", &E::deviceWaitIdle, {true}},
          {"fence_create", &E::fenceCreate},
          {"fence_wait", &E::fenceWait, {true}},
          {"fence_status", &E::fenceStatus, {true}},
          {"fence_reset", &E::fenceReset},
          {"fence_destroy", &E::fenceDestroy},
          {"semaphore_create", &E::semaphoreCreate},
          {"semaphore_destroy", &E::semaphoreDestroy},
          {"timeline_create", &E::timelineCreate},
          {"timeline_signal", &E::timelineSignal},
          {"timeline_wait", &E::timelineWait, {true}},
          {"timeline_value", &E::timelineValue, {true}},
          {"timeline_destroy", &E::timelineDestroy},
          {"buffer_create", &E::bufferCreate},
          {"buffer_destroy", &E::bufferDestroy},
          {"memory_allocate", &E::memoryAllocate},
          {"memory_bind", &E::memoryBind},
          {"memory_free", &E::memoryFree},
          {"memory_read", &E::memoryRead},
          {"dpool_create", &E::dpoolCreate},
          {"dpool_reset", &E::dpoolReset},
          {"dpool_destroy", &E::dpoolDestroy},
          {"set_allocate", &E::setAllocate},
          {"set_update", &E::setUpdate},
          {"set_free", &E::setFree},
          {"layout_create", &E::layoutCreate},
          {"layout_destroy", &E::layoutDestroy},
          {"pipeline_create", &E::pipelineCreate},
          {"pipeline_destroy", &E::pipelineDestroy},
      },
      releaseOverrides(std::make_index_sequence<kKinds>()),
  };
  return table;
}

void Executor::run(const ModelCall& call) {
  const OpTable::Op& op = table().at(call.op);
  idleForRelease_ = false;
  failed_.guard([&] {
    try {
      runOp(op.handler, op.extra.retires, call);
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
          runOp(op.handler, op.extra.retires, call);
          break;
        } catch (const Uncertain&) {
          if (tries == kUncertainTries) {
            throw std::logic_error(std::string(call.op) + ": other threads kept work pending " +
                                   "through " + std::to_string(tries) + " waits for the queue");
          }
        }
      }
    }
  });
}

void Executor::runOp(OpTable::Handler handler, bool retires, const ModelCall& call) {
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
    dpool = shadow_.sets.named(set).dpool;
  }
  return lockDpool(dpool);
}

CmdState& Executor::cmd(const std::string& name) {
  return shadow_.cmds.named(name);
}

}  // namespace vulkan

std::unique_ptr<ModelExecutor> makeVulkanExecutor(std::string_view model,
                                                  const BackendOptions& options) {
  if (model != "vulkan") {
    throw std::logic_error("the vulkan backend executes model vulkan, not " + std::string(model));
  }
  return std::make_unique<vulkan::Executor>(options);
}

kit::TableShape vulkanExecutorTable() {
  return vulkan::Executor::table().shape();
}

}  // namespace gpufuzz
