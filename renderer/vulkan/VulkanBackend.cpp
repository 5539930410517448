// VulkanBackend.cpp: the vulkan backend on Vulkan compute.
#include "renderer/vulkan/VulkanBackend.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "renderer/Text.h"
#include "renderer/device/DeviceError.h"
#include "renderer/device/DeviceIndex.h"
#include "renderer/device/HandleChecks.h"
#include "renderer/device/PendingWork.h"
#include "renderer/device/RuntimeSeam.h"
#include "renderer/vulkan/RasterShader.h"
#include "renderer/vulkan/VulkanApi.h"
#include "renderer/vulkan/VulkanDeviceMemory.h"
#include "renderer/vulkan/VulkanPreload.h"
#include "renderer/vulkan/VulkanValidation.h"

namespace gpufuzz {

namespace {

/// Invocations per workgroup along x and y: local_size of Raster.comp.
constexpr uint32_t kRasterGroup = 8;
/// Submissions in flight per context before an enqueue waits for them all; also the descriptor
/// pool's size. Below it, fences are looked at only by the waits the caller asks for, so what the
/// layer counts as pending (and so whether a free is invalid) never depends on timing.
constexpr uint32_t kMaxPending = 256;
/// Idle staging memory a context keeps for later copies, at most; and the least it makes.
constexpr uint64_t kKeptStagingBytes = uint64_t{32} << 20;
constexpr uint64_t kMinStagingBytes = uint64_t{64} << 10;
constexpr uint32_t kTriangleBinding = 1;
constexpr uint32_t kTextureBinding = 2;
/// The triangle list is a uniform buffer (Raster.comp): lavapipe reads a uniform block at an
/// index every invocation shares once per subgroup, where a storage buffer costs a bounds-checked
/// load per invocation (the shader's time on lavapipe was mostly those loads).
constexpr uint64_t kTriangleRange = uint64_t{raster::kMaxTriangles} * sizeof(raster::Triangle);

VkDescriptorType bindingType(uint32_t binding) {
  return binding == kTriangleBinding ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                     : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
}

[[noreturn]] void fail(CallPoint point, std::string message) {
  throw DeviceError(point, std::move(message));
}

/// Host-visible memory that copies go through, mapped once, for as long as it lives.
struct Staging {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  std::byte* mapped = nullptr;
  uint64_t capacity = 0;
};

/// One vkQueueSubmit and what it holds until its fence signals.
struct Submission {
  VkFence fence = VK_NULL_HANDLE;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkDescriptorSet descriptors = VK_NULL_HANDLE;
  Staging staging;
  /// The caller's buffer a copy reads or writes (not a dispatch's: the layer tracks those).
  VkBuffer copied = VK_NULL_HANDLE;
};

class VulkanBackend final : public Backend {
 public:
  explicit VulkanBackend(const BackendOptions& options);
  ~VulkanBackend() override;
  VulkanBackend(const VulkanBackend&) = delete;
  VulkanBackend& operator=(const VulkanBackend&) = delete;

  std::string_view name() const override { return "vulkan"; }
  ContextId createContext() override;
  void destroyContext(ContextId ctx) override;
  BufferId allocBuffer(ContextId ctx, uint64_t bytes) override;
  void freeBuffer(BufferId buf) override;
  void copyToDevice(ContextId ctx, BufferId dst, std::span<const std::byte> src) override;
  void copyToHost(ContextId ctx, BufferId src, std::span<std::byte> dst) override;
  void launch(ContextId ctx, const RasterLaunch& launch) override;
  void synchronize(ContextId ctx) override;
  std::optional<PendingWork> pendingAfterWait(ContextId ctx) override;
  MemoryInUse memoryInUse() const override;
  /// VK_ERROR_DEVICE_LOST comes only from calls that submit, wait or map, not vkAllocateMemory.
  std::optional<std::string> failureError(FailureKind kind, CallPoint point) const override {
    switch (kind) {
      case FailureKind::DeviceMemory:
        return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
      case FailureKind::HostMemory:
        return "VK_ERROR_OUT_OF_HOST_MEMORY";
      case FailureKind::DeviceLost:
        if (point == CallPoint::BufAlloc) return std::nullopt;
        return "VK_ERROR_DEVICE_LOST";
    }
    return std::nullopt;
  }

  std::string description() const override { return description_; }
  bool leaveDeviceMemory(uint64_t bytes) override {
    return vk::leaveDeviceMemory(vk_, physical_, bytes, held_);
  }

 private:
  struct Context {
    VkDevice device = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;
    VkCommandPool commandPool = VK_NULL_HANDLE;
    VkDescriptorPool descriptorPool = VK_NULL_HANDLE;
    VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
    VkPipelineLayout pipelineLayout = VK_NULL_HANDLE;
    VkShaderModule shader = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;  // made at the first launch
    std::deque<Submission> pending;
    /// What retired submissions held, reused by later ones (a command buffer re-begun, a fence
    /// reset, a descriptor set rewritten, staging memory refilled): cheaper, for the driver and
    /// the layer, than making and destroying them for every copy and launch. Only what a fence
    /// has shown complete comes here, so reuse never overwrites memory a submission still reads.
    std::vector<VkCommandBuffer> idleCommands;
    std::vector<VkFence> idleFences;
    std::vector<VkDescriptorSet> idleDescriptors;
    std::vector<Staging> idleStaging;
  };
  struct Buffer {
    ContextId owner = 0;
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    uint64_t bytes = 0;
    /// Its device was destroyed: its handles are dead and never used again.
    bool orphaned = false;
  };

  /// Throws InvalidUse when the layer reported an error during `call`; then DeviceError when
  /// `result` is a failure.
  void check(VkResult result, CallPoint point, const char* call);
  void checkValidation(CallPoint point, const char* call);
  Context& liveContext(ContextId ctx, CallPoint point, const char* call);
  const Buffer& ownedBuffer(BufferId buf, ContextId ctx, uint64_t bytesNeeded, CallPoint point,
                            const char* call, const char* role) const;

  void pickPhysicalDevice(const std::string& wanted);
  uint32_t memoryType(uint32_t allowed, VkMemoryPropertyFlags wanted,
                      VkMemoryPropertyFlags preferred) const;
  /// A buffer bound to memory of its own; throws with both released on failure.
  void makeBuffer(Context& context, uint64_t bytes, VkBufferUsageFlags usage, bool hostVisible,
                  CallPoint point, VkBuffer* buffer, VkDeviceMemory* memory);
  void makePipeline(Context& context, CallPoint point);

  /// Staging memory of at least `bytes`: the smallest idle one that fits, else a new one.
  Staging takeStaging(Context& context, uint64_t bytes, CallPoint point);
  /// Back to the idle list, or destroyed when the list holds kKeptStagingBytes already.
  void keepStaging(Context& context, Staging staging);
  void destroyStaging(Context& context, Staging& staging);

  /// A command buffer recording, its first command a barrier after everything submitted before.
  VkCommandBuffer beginCommands(Context& context, CallPoint point);
  void submit(Context& context, Submission submission, CallPoint point);
  /// Releases what completed submissions hold, oldest first, stopping at the first still pending.
  void retireCompleted(Context& context, CallPoint point);
  void waitForQueue(Context& context, CallPoint point, const char* call);
  /// Destroys what a submission holds (one that failed, or at teardown).
  void release(Context& context, Submission& submission);
  /// Keeps what a completed submission holds for reuse.
  void recycle(Context& context, Submission& submission);
  /// What a wait on `context` left: the submissions whose fences had not signalled when it
  /// returned (each wait retires the signalled ones, asking vkGetFenceStatus).
  static std::optional<PendingWork> leftByWait(const Context& context);
  /// Destroys what the backend made on the device (not the caller's buffers), then the device,
  /// marking the buffers of context `owner` (0: none) orphaned just before.
  void teardown(Context& context, ContextId owner);

  const vk::Loader& loader_;
  /// Per thread: calls of other threads overlap, and each call's report is its own thread's.
  vk::ValidationMessages messages_{/*perThread=*/true};
  vk::Instance made_;
  bool validation_ = false;
  VkInstance instance_ = VK_NULL_HANDLE;
  vk::InstanceApi vk_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  /// What --device-memory took, given back before the instance is destroyed.
  vk::HeldMemory held_;
  uint32_t queueFamily_ = 0;
  VkPhysicalDeviceMemoryProperties memory_{};
  std::string description_;
  /// Set by the first InvalidUse: from then on the backend only tears itself down.
  bool invalid_ = false;

  ReleasedWaits released_;
  std::map<ContextId, Context> contexts_;
  std::map<BufferId, Buffer> buffers_;
  ContextId nextContext_ = 1;
  BufferId nextBuffer_ = 1;
  uint64_t bytesInUse_ = 0;
};

VulkanBackend::VulkanBackend(const BackendOptions& options)
    : loader_((preloadVulkanLibraries(), vk::loader())),
      made_(vk::makeInstance(loader_, options.validation, messages_)),
      validation_(made_.validation),
      instance_(made_.instance),
      vk_(made_.api) {
  try {
    pickPhysicalDevice(options.device);
  } catch (...) {
    made_.destroy();
    throw;
  }
  description_ += made_.validationText;
}

void VulkanBackend::pickPhysicalDevice(const std::string& wanted) {
  uint32_t count = 0;
  VkResult result = vk_.vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  if (result == VK_SUCCESS)
    result = vk_.vkEnumeratePhysicalDevices(instance_, &count, devices.data());
  if (result != VK_SUCCESS && result != VK_INCOMPLETE) {
    throw DeviceUnavailable("vkEnumeratePhysicalDevices: " + vk::resultName(result));
  }
  std::string seen;
  std::string unusable;
  struct Candidate {
    VkPhysicalDevice device;
    uint32_t family;
    std::string text;
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
    const std::string name = p.deviceName;
    seen += (seen.empty() ? "" : ", ") + name;
    if (!wanted.empty() && !containsIgnoringCase(name, wanted) &&
        !containsIgnoringCase(driver.driverName, wanted)) {
      continue;
    }
    VkPhysicalDeviceVulkan12Features features12{};
    features12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    VkPhysicalDeviceFeatures2 features2{};
    features2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    features2.pNext = &features12;
    vk_.vkGetPhysicalDeviceFeatures2(device, &features2);
    const VkPhysicalDeviceFeatures& features = features2.features;
    uint32_t families = 0;
    vk_.vkGetPhysicalDeviceQueueFamilyProperties(device, &families, nullptr);
    std::vector<VkQueueFamilyProperties> queues(families);
    vk_.vkGetPhysicalDeviceQueueFamilyProperties(device, &families, queues.data());
    std::optional<uint32_t> compute;
    for (uint32_t i = 0; i < families && !compute; ++i) {
      if ((queues[i].queueFlags & VK_QUEUE_COMPUTE_BIT) != 0) compute = i;
    }
    std::string lacks;
    const auto need = [&lacks](bool has, const std::string& what) {
      if (!has) lacks += (lacks.empty() ? "" : ", ") + what;
    };
    need(compute.has_value(), "a compute queue");
    need(features.shaderInt64, "shaderInt64");
    need(features.shaderStorageBufferArrayDynamicIndexing,
         "shaderStorageBufferArrayDynamicIndexing");
    need(features12.scalarBlockLayout, "scalarBlockLayout");
    need(p.limits.maxUniformBufferRange >= kTriangleRange,
         "maxUniformBufferRange " + std::to_string(kTriangleRange));
    need(VK_API_VERSION_MAJOR(p.apiVersion) != 1 || VK_API_VERSION_MINOR(p.apiVersion) >= 2,
         "Vulkan 1.2");
    if (!lacks.empty()) {
      unusable += "; " + name + " lacks " + lacks;
      continue;
    }
    const bool gpu = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
                     p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
    candidates.push_back(Candidate{device, *compute,
                                   name + ", driver " + driver.driverName + " " +
                                       driver.driverInfo + ", Vulkan " +
                                       vk::versionText(p.apiVersion),
                                   gpu});
  }
  if (candidates.empty()) {
    std::string why =
        devices.empty() ? "no Vulkan device (install mesa-vulkan-drivers for lavapipe)"
        : wanted.empty()
            ? "no usable Vulkan device among " + seen
            : "no usable Vulkan device matches --device '" + wanted + "' (devices: " + seen + ")";
    throw DeviceUnavailable(why + unusable);
  }
  // The GPU GPUFUZZ_DEVICE_INDEX names among the usable ones (DeviceIndex.h), else the first.
  std::vector<Candidate*> gpus;
  for (Candidate& c : candidates) {
    if (c.gpu) gpus.push_back(&c);
  }
  const Candidate* chosen =
      gpus.empty() ? &candidates.front() : gpus[deviceIndexAmong(gpus.size())];
  physical_ = chosen->device;
  queueFamily_ = chosen->family;
  description_ = chosen->text;
  vk_.vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
}

VulkanBackend::~VulkanBackend() {
  invalid_ = true;  // nothing more is reported: the backend is going away
  for (auto& [id, context] : contexts_) {
    if (context.device != VK_NULL_HANDLE) vk_.vkDeviceWaitIdle(context.device);
    for (auto& [bufferId, buffer] : buffers_) {
      if (buffer.owner != id || buffer.orphaned) continue;
      vk_.vkDestroyBuffer(context.device, buffer.buffer, nullptr);
      vk_.vkFreeMemory(context.device, buffer.memory, nullptr);
    }
    teardown(context, id);
  }
  held_.release(vk_);
  made_.destroy();
}

void VulkanBackend::checkValidation(CallPoint point, const char* call) {
  std::optional<vk::ValidationMessages::Error> error = messages_.take();
  if (!error || invalid_) return;
  invalid_ = true;
  throw InvalidUse(point, std::string(call) + ": " +
                              (error->vuid.empty() ? "validation error" : error->vuid) + ": " +
                              error->message);
}

void VulkanBackend::check(VkResult result, CallPoint point, const char* call) {
  checkValidation(point, call);
  if (result != VK_SUCCESS) fail(point, std::string(call) + ": " + vk::resultName(result));
}

VulkanBackend::Context& VulkanBackend::liveContext(ContextId ctx, CallPoint point,
                                                   const char* call) {
  if (invalid_) fail(point, std::string(call) + ": not called: the run broke Vulkan's rules");
  return checkedContext(contexts_, nextContext_, ctx, point, call, "device");
}

const VulkanBackend::Buffer& VulkanBackend::ownedBuffer(BufferId buf, ContextId ctx,
                                                        uint64_t bytesNeeded, CallPoint point,
                                                        const char* call, const char* role) const {
  return checkedBuffer(buffers_, nextBuffer_, buf, ctx, bytesNeeded, point, call, role, "device");
}

uint32_t VulkanBackend::memoryType(uint32_t allowed, VkMemoryPropertyFlags wanted,
                                   VkMemoryPropertyFlags preferred) const {
  std::optional<uint32_t> fallback;
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags flags = memory_.memoryTypes[i].propertyFlags;
    if ((allowed & (1U << i)) == 0 || (flags & wanted) != wanted) continue;
    if ((flags & preferred) == preferred) return i;
    if (!fallback) fallback = i;
  }
  if (!fallback) throw DeviceUnavailable("the Vulkan device has no memory type fit for a buffer");
  return *fallback;
}

void VulkanBackend::makeBuffer(Context& context, uint64_t bytes, VkBufferUsageFlags usage,
                               bool hostVisible, CallPoint point, VkBuffer* buffer,
                               VkDeviceMemory* memory) {
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = bytes;
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vk_.vkCreateBuffer(context.device, &info, nullptr, buffer), point, "vkCreateBuffer");
  try {
    VkMemoryRequirements needs{};
    vk_.vkGetBufferMemoryRequirements(context.device, *buffer, &needs);
    VkMemoryAllocateInfo allocate{};
    allocate.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    allocate.allocationSize = needs.size;
    allocate.memoryTypeIndex =
        hostVisible
            ? memoryType(needs.memoryTypeBits,
                         VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                         0)
            : memoryType(needs.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    check(vk_.vkAllocateMemory(context.device, &allocate, nullptr, memory), point,
          "vkAllocateMemory");
    try {
      check(vk_.vkBindBufferMemory(context.device, *buffer, *memory, 0), point,
            "vkBindBufferMemory");
    } catch (...) {
      vk_.vkFreeMemory(context.device, *memory, nullptr);
      throw;
    }
  } catch (...) {
    vk_.vkDestroyBuffer(context.device, *buffer, nullptr);
    throw;
  }
}

void VulkanBackend::teardown(Context& context, ContextId owner) {
  if (context.device == VK_NULL_HANDLE) return;
  for (Submission& submission : context.pending)
    release(context, submission);
  context.pending.clear();
  const VkDevice d = context.device;
  for (Staging& staging : context.idleStaging)
    destroyStaging(context, staging);
  for (VkFence fence : context.idleFences)
    vk_.vkDestroyFence(d, fence, nullptr);
  // Idle command buffers and descriptor sets go with their pools.
  if (context.pipeline != VK_NULL_HANDLE) vk_.vkDestroyPipeline(d, context.pipeline, nullptr);
  if (context.shader != VK_NULL_HANDLE) vk_.vkDestroyShaderModule(d, context.shader, nullptr);
  if (context.pipelineLayout != VK_NULL_HANDLE) {
    vk_.vkDestroyPipelineLayout(d, context.pipelineLayout, nullptr);
  }
  if (context.setLayout != VK_NULL_HANDLE) {
    vk_.vkDestroyDescriptorSetLayout(d, context.setLayout, nullptr);
  }
  if (context.descriptorPool != VK_NULL_HANDLE) {
    vk_.vkDestroyDescriptorPool(d, context.descriptorPool, nullptr);
  }
  if (context.commandPool != VK_NULL_HANDLE) {
    vk_.vkDestroyCommandPool(d, context.commandPool, nullptr);
  }
  // Held from the marks through vkDestroyDevice: a buffer not marked orphaned has a live device.
  // No free of a buffer is inside the device while it is destroyed, as external sync requires.
  const seam::KeepState keep;
  // vkDestroyDevice is never skipped by the layer: from here on the device's handles are dead,
  // whatever the layer says of the call.
  for (auto& [id, buffer] : buffers_) {
    if (buffer.owner == owner) buffer.orphaned = true;
  }
  vk_.vkDestroyDevice(d, nullptr);
  context = Context{};
}

ContextId VulkanBackend::createContext() {
  constexpr CallPoint kPoint = CallPoint::CtxCreate;
  if (invalid_) fail(kPoint, "vkCreateDevice: not called: the run broke Vulkan's rules");
  Context context;
  const float priority = 1.0F;
  VkDeviceQueueCreateInfo queue{};
  queue.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue.queueFamilyIndex = queueFamily_;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  VkPhysicalDeviceFeatures features{};
  features.shaderInt64 = VK_TRUE;
  features.shaderStorageBufferArrayDynamicIndexing = VK_TRUE;
  VkPhysicalDeviceVulkan12Features features12{};
  features12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  features12.scalarBlockLayout = VK_TRUE;
  VkDeviceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  info.pNext = &features12;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.pEnabledFeatures = &features;
  check(vk_.vkCreateDevice(physical_, &info, nullptr, &context.device), kPoint, "vkCreateDevice");
  try {
    vk_.vkGetDeviceQueue(context.device, queueFamily_, 0, &context.queue);

    VkCommandPoolCreateInfo pool{};
    pool.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pool.queueFamilyIndex = queueFamily_;
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;  // re-begun when reused
    check(vk_.vkCreateCommandPool(context.device, &pool, nullptr, &context.commandPool), kPoint,
          "vkCreateCommandPool");

    const VkDescriptorPoolSize sizes[] = {
        {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kMaxPending * (1 + raster::kMaxTextures)},
        {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, kMaxPending}};
    VkDescriptorPoolCreateInfo descriptors{};
    descriptors.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    descriptors.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
    descriptors.maxSets = kMaxPending;
    descriptors.poolSizeCount = 2;
    descriptors.pPoolSizes = sizes;
    check(
        vk_.vkCreateDescriptorPool(context.device, &descriptors, nullptr, &context.descriptorPool),
        kPoint, "vkCreateDescriptorPool");

    VkDescriptorSetLayoutBinding bindings[3]{};
    for (uint32_t i = 0; i < 3; ++i) {
      bindings[i].binding = i;
      bindings[i].descriptorType = bindingType(i);
      bindings[i].descriptorCount = i == kTextureBinding ? raster::kMaxTextures : 1;
      bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo setLayout{};
    setLayout.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
    setLayout.bindingCount = 3;
    setLayout.pBindings = bindings;
    check(vk_.vkCreateDescriptorSetLayout(context.device, &setLayout, nullptr, &context.setLayout),
          kPoint, "vkCreateDescriptorSetLayout");

    const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, 6 * sizeof(uint32_t)};
    VkPipelineLayoutCreateInfo layout{};
    layout.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    layout.setLayoutCount = 1;
    layout.pSetLayouts = &context.setLayout;
    layout.pushConstantRangeCount = 1;
    layout.pPushConstantRanges = &push;
    check(vk_.vkCreatePipelineLayout(context.device, &layout, nullptr, &context.pipelineLayout),
          kPoint, "vkCreatePipelineLayout");

    VkShaderModuleCreateInfo shader{};
    shader.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    shader.codeSize = vulkan::kRasterSpirvSize;
    shader.pCode = reinterpret_cast<const uint32_t*>(vulkan::kRasterSpirv);
    check(vk_.vkCreateShaderModule(context.device, &shader, nullptr, &context.shader), kPoint,
          "vkCreateShaderModule");
  } catch (const DeviceError&) {
    teardown(context, 0);
    throw;
  }
  const ContextId id = nextContext_++;
  contexts_.emplace(id, std::move(context));
  return id;
}

void VulkanBackend::makePipeline(Context& context, CallPoint point) {
  VkComputePipelineCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = context.shader;
  info.stage.pName = "main";
  info.layout = context.pipelineLayout;
  check(vk_.vkCreateComputePipelines(context.device, VK_NULL_HANDLE, 1, &info, nullptr,
                                     &context.pipeline),
        point, "vkCreateComputePipelines");
}

void VulkanBackend::destroyContext(ContextId ctx) {
  Context& context = liveContext(ctx, CallPoint::CtxDestroy, "vkDestroyDevice");
  waitForQueue(context, CallPoint::CtxDestroy, "vkWaitForFences");
  released_.record(ctx, leftByWait(context));
  teardown(context, ctx);
  contexts_.erase(ctx);
  checkValidation(CallPoint::CtxDestroy, "vkDestroyDevice");
}

BufferId VulkanBackend::allocBuffer(ContextId ctx, uint64_t bytes) {
  constexpr CallPoint kPoint = CallPoint::BufAlloc;
  Context& context = liveContext(ctx, kPoint, "vkCreateBuffer");
  if (bytes == 0) fail(kPoint, "vkCreateBuffer: size 0 (VUID-VkBufferCreateInfo-size-00912)");
  Buffer buffer{ctx, VK_NULL_HANDLE, VK_NULL_HANDLE, bytes, false};
  makeBuffer(context, bytes,
             VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
                 VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
             false, kPoint, &buffer.buffer, &buffer.memory);
  const BufferId id = nextBuffer_++;
  buffers_.emplace(id, buffer);
  bytesInUse_ += bytes;
  return id;
}

void VulkanBackend::freeBuffer(BufferId buf) {
  constexpr CallPoint kPoint = CallPoint::BufFree;
  if (invalid_) fail(kPoint, "vkDestroyBuffer: not called: the run broke Vulkan's rules");
  auto it = buffers_.find(buf);
  if (it == buffers_.end()) {
    const bool freed = buf > 0 && buf < nextBuffer_;
    fail(kPoint, "vkDestroyBuffer: buffer " + std::to_string(buf) +
                     (freed ? " was already freed" : " is unknown"));
  }
  // Held through both calls: the owner's destroy on another thread must not destroy the device
  // they run in.
  const seam::KeepState keep;
  Buffer& buffer = it->second;
  if (buffer.orphaned) {
    const ContextId owner = buffer.owner;
    bytesInUse_ -= buffer.bytes;
    buffers_.erase(it);
    fail(kPoint, "vkDestroyBuffer: not called: buffer " + std::to_string(buf) +
                     " outlived its device " + std::to_string(owner) +
                     " (vkDestroyDevice ran while it was alive; calling into a destroyed device "
                     "is undefined behaviour)");
  }
  Context& context = contexts_.at(buffer.owner);
  if (validation_) {
    // The 1.3.239 layer does not see a buffer as in use by a pending vkCmdCopyBuffer, and lavapipe
    // then crashes (corpus/runtimes/vulkan-layer-copy-in-use.md): the backend reports that rule
    // itself, before the call, naming it as the layer does for a dispatch.
    for (const Submission& s : context.pending) {
      if (s.copied != buffer.buffer) continue;
      invalid_ = true;
      throw InvalidUse(kPoint, "vkDestroyBuffer: VUID-vkDestroyBuffer-buffer-00922: buffer " +
                                   std::to_string(buf) +
                                   " is used by a copy submitted and not yet waited for (seen by "
                                   "the backend; the validation layer misses copies)");
    }
  }
  // The layer skips a call it reports: then the buffer is still whole, and the backend's
  // destructor releases it once the device is idle.
  vk_.vkDestroyBuffer(context.device, buffer.buffer, nullptr);
  checkValidation(kPoint, "vkDestroyBuffer");
  buffer.buffer = VK_NULL_HANDLE;
  vk_.vkFreeMemory(context.device, buffer.memory, nullptr);
  checkValidation(kPoint, "vkFreeMemory");
  bytesInUse_ -= buffer.bytes;
  buffers_.erase(it);
}

VkCommandBuffer VulkanBackend::beginCommands(Context& context, CallPoint point) {
  VkCommandBuffer commands = VK_NULL_HANDLE;
  if (!context.idleCommands.empty()) {
    commands = context.idleCommands.back();
    context.idleCommands.pop_back();
  } else {
    VkCommandBufferAllocateInfo allocate{};
    allocate.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    allocate.commandPool = context.commandPool;
    allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    allocate.commandBufferCount = 1;
    check(vk_.vkAllocateCommandBuffers(context.device, &allocate, &commands), point,
          "vkAllocateCommandBuffers");
  }
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  const VkResult result = vk_.vkBeginCommandBuffer(commands, &begin);
  if (result != VK_SUCCESS) {
    vk_.vkFreeCommandBuffers(context.device, context.commandPool, 1, &commands);
    check(result, point, "vkBeginCommandBuffer");
  }
  // The queue is in order: everything submitted before finishes its writes before this
  // submission's copies and dispatches read or write (and its reads before they write).
  VkMemoryBarrier barrier{};
  barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vk_.vkCmdPipelineBarrier(commands, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  return commands;
}

void VulkanBackend::submit(Context& context, Submission submission, CallPoint point) {
  // Held in the pending list from here on, so that a failure below still releases it.
  context.pending.push_back(submission);
  Submission& s = context.pending.back();
  check(vk_.vkEndCommandBuffer(s.commands), point, "vkEndCommandBuffer");
  if (!context.idleFences.empty()) {
    s.fence = context.idleFences.back();
    context.idleFences.pop_back();
    const VkResult reset = vk_.vkResetFences(context.device, 1, &s.fence);
    if (reset != VK_SUCCESS) {
      // Never submitted: a wait on it would never return.
      vk_.vkDestroyFence(context.device, s.fence, nullptr);
      s.fence = VK_NULL_HANDLE;
    }
    check(reset, point, "vkResetFences");
  } else {
    VkFenceCreateInfo fence{};
    fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    check(vk_.vkCreateFence(context.device, &fence, nullptr, &s.fence), point, "vkCreateFence");
  }
  VkSubmitInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  info.commandBufferCount = 1;
  info.pCommandBuffers = &s.commands;
  const VkResult result = vk_.vkQueueSubmit(context.queue, 1, &info, s.fence);
  if (result != VK_SUCCESS) {
    // Never submitted: its fence would never signal.
    vk_.vkDestroyFence(context.device, s.fence, nullptr);
    s.fence = VK_NULL_HANDLE;
  }
  check(result, point, "vkQueueSubmit");
}

void VulkanBackend::release(Context& context, Submission& s) {
  const VkDevice d = context.device;
  if (s.fence != VK_NULL_HANDLE) vk_.vkDestroyFence(d, s.fence, nullptr);
  if (s.commands != VK_NULL_HANDLE)
    vk_.vkFreeCommandBuffers(d, context.commandPool, 1, &s.commands);
  if (s.descriptors != VK_NULL_HANDLE) {
    vk_.vkFreeDescriptorSets(d, context.descriptorPool, 1, &s.descriptors);
  }
  destroyStaging(context, s.staging);
  s = Submission{};
}

void VulkanBackend::recycle(Context& context, Submission& s) {
  if (s.fence != VK_NULL_HANDLE) context.idleFences.push_back(s.fence);
  if (s.commands != VK_NULL_HANDLE) context.idleCommands.push_back(s.commands);
  if (s.descriptors != VK_NULL_HANDLE) context.idleDescriptors.push_back(s.descriptors);
  if (s.staging.buffer != VK_NULL_HANDLE) keepStaging(context, s.staging);
  s = Submission{};
}

Staging VulkanBackend::takeStaging(Context& context, uint64_t bytes, CallPoint point) {
  auto best = context.idleStaging.end();
  for (auto it = context.idleStaging.begin(); it != context.idleStaging.end(); ++it) {
    if (it->capacity >= bytes &&
        (best == context.idleStaging.end() || it->capacity < best->capacity))
      best = it;
  }
  if (best != context.idleStaging.end()) {
    const Staging staging = *best;
    context.idleStaging.erase(best);
    return staging;
  }
  Staging staging;
  staging.capacity = std::max(bytes, kMinStagingBytes);
  makeBuffer(context, staging.capacity,
             VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, point,
             &staging.buffer, &staging.memory);
  void* mapped = nullptr;
  const VkResult result =
      vk_.vkMapMemory(context.device, staging.memory, 0, VK_WHOLE_SIZE, 0, &mapped);
  if (result != VK_SUCCESS) destroyStaging(context, staging);
  check(result, point, "vkMapMemory");
  staging.mapped = static_cast<std::byte*>(mapped);
  return staging;
}

void VulkanBackend::keepStaging(Context& context, Staging staging) {
  uint64_t kept = 0;
  for (const Staging& idle : context.idleStaging)
    kept += idle.capacity;
  if (kept + staging.capacity > kKeptStagingBytes) {
    destroyStaging(context, staging);
  } else {
    context.idleStaging.push_back(staging);
  }
}

void VulkanBackend::destroyStaging(Context& context, Staging& staging) {
  if (staging.buffer != VK_NULL_HANDLE)
    vk_.vkDestroyBuffer(context.device, staging.buffer, nullptr);
  if (staging.memory != VK_NULL_HANDLE) vk_.vkFreeMemory(context.device, staging.memory, nullptr);
  staging = Staging{};
}

void VulkanBackend::retireCompleted(Context& context, CallPoint point) {
  while (!context.pending.empty()) {
    Submission& oldest = context.pending.front();
    if (oldest.fence != VK_NULL_HANDLE) {
      const VkResult status = vk_.vkGetFenceStatus(context.device, oldest.fence);
      if (status == VK_NOT_READY) return;
      check(status, point, "vkGetFenceStatus");
    }
    recycle(context, oldest);
    context.pending.pop_front();
  }
}

std::optional<PendingWork> VulkanBackend::leftByWait(const Context& context) {
  if (context.pending.empty()) return std::nullopt;
  std::vector<PendingCommand> commands;
  for (std::size_t i = 0; i < context.pending.size(); ++i) {
    commands.push_back({"vkQueueSubmit", "its fence unsignalled"});
  }
  return PendingWork{"vkWaitForFences", describePendingCommands(commands)};
}

std::optional<PendingWork> VulkanBackend::pendingAfterWait(ContextId ctx) {
  const auto it = contexts_.find(ctx);
  if (it == contexts_.end()) return released_.take(ctx);
  return leftByWait(it->second);
}

void VulkanBackend::waitForQueue(Context& context, CallPoint point, const char* call) {
  std::vector<VkFence> fences;
  for (const Submission& s : context.pending) {
    if (s.fence != VK_NULL_HANDLE) fences.push_back(s.fence);
  }
  if (!fences.empty()) {
    check(vk_.vkWaitForFences(context.device, static_cast<uint32_t>(fences.size()), fences.data(),
                              VK_TRUE, UINT64_MAX),
          point, call);
  }
  retireCompleted(context, point);
}

void VulkanBackend::copyToDevice(ContextId ctx, BufferId dst, std::span<const std::byte> src) {
  constexpr CallPoint kPoint = CallPoint::CopyToDevice;
  Context& context = liveContext(ctx, kPoint, "vkCmdCopyBuffer");
  const VkBuffer target =
      ownedBuffer(dst, ctx, src.size(), kPoint, "vkCmdCopyBuffer", "destination").buffer;
  if (src.empty()) return;
  if (context.pending.size() >= kMaxPending) waitForQueue(context, kPoint, "vkWaitForFences");

  Submission s;
  s.staging = takeStaging(context, src.size(), kPoint);
  std::memcpy(s.staging.mapped, src.data(), src.size());
  try {
    s.commands = beginCommands(context, kPoint);
  } catch (...) {
    release(context, s);
    throw;
  }
  const VkBufferCopy region{0, 0, src.size()};
  vk_.vkCmdCopyBuffer(s.commands, s.staging.buffer, target, 1, &region);
  s.copied = target;
  checkValidation(kPoint, "vkCmdCopyBuffer");
  submit(context, s, kPoint);
}

void VulkanBackend::copyToHost(ContextId ctx, BufferId src, std::span<std::byte> dst) {
  constexpr CallPoint kPoint = CallPoint::CopyToHost;
  Context& context = liveContext(ctx, kPoint, "vkCmdCopyBuffer");
  const VkBuffer source =
      ownedBuffer(src, ctx, dst.size(), kPoint, "vkCmdCopyBuffer", "source").buffer;
  waitForQueue(context, kPoint, "vkWaitForFences");
  if (dst.empty()) return;

  // Outside the submission, so that it outlives the wait that retires the copy.
  Staging staging = takeStaging(context, dst.size(), kPoint);
  try {
    Submission s;
    s.commands = beginCommands(context, kPoint);
    const VkBufferCopy region{0, 0, dst.size()};
    vk_.vkCmdCopyBuffer(s.commands, source, staging.buffer, 1, &region);
    VkMemoryBarrier toHost{};
    toHost.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    toHost.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    toHost.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vk_.vkCmdPipelineBarrier(s.commands, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                             0, 1, &toHost, 0, nullptr, 0, nullptr);
    checkValidation(kPoint, "vkCmdCopyBuffer");
    submit(context, s, kPoint);
    waitForQueue(context, kPoint, "vkWaitForFences");
    std::memcpy(dst.data(), staging.mapped, dst.size());
  } catch (...) {
    // After a validation error the copy may still be pending: the staging memory is left to the
    // process's end rather than freed under it.
    if (!invalid_) {
      vk_.vkDeviceWaitIdle(context.device);
      destroyStaging(context, staging);
    }
    throw;
  }
  keepStaging(context, staging);
}

void VulkanBackend::launch(ContextId ctx, const RasterLaunch& launch) {
  constexpr CallPoint kPoint = CallPoint::Launch;
  constexpr const char* kCall = "vkCmdDispatch";
  Context& context = liveContext(ctx, kPoint, kCall);
  if (launch.textureCount > raster::kMaxTextures) {
    fail(kPoint, std::string(kCall) + ": " + std::to_string(launch.textureCount) +
                     " textures, at most " + std::to_string(raster::kMaxTextures));
  }
  if (launch.textureCount > 0 && launch.textureSize == 0) {
    fail(kPoint, std::string(kCall) + ": textures of size 0");
  }
  const uint64_t pixelBytes = uint64_t{launch.width} * launch.height * sizeof(uint32_t);
  const VkBuffer framebuffer =
      ownedBuffer(launch.framebuffer, ctx, pixelBytes, kPoint, kCall, "framebuffer").buffer;
  if (launch.triangleCount > raster::kMaxTriangles) {
    fail(kPoint, std::string(kCall) + ": " + std::to_string(launch.triangleCount) +
                     " triangles, at most " + std::to_string(raster::kMaxTriangles));
  }
  const uint64_t triangleBytes = uint64_t{launch.triangleCount} * sizeof(raster::Triangle);
  const Buffer& vertices =
      ownedBuffer(launch.vertices, ctx, triangleBytes, kPoint, kCall, "vertex");
  const uint64_t texelBytes = uint64_t{launch.textureSize} * launch.textureSize * sizeof(uint32_t);
  VkDescriptorBufferInfo buffers[kTextureBinding + raster::kMaxTextures]{};
  buffers[0] = VkDescriptorBufferInfo{framebuffer, 0, pixelBytes};
  buffers[kTriangleBinding] =
      VkDescriptorBufferInfo{vertices.buffer, 0, std::min(vertices.bytes, kTriangleRange)};
  for (uint32_t i = 0; i < raster::kMaxTextures; ++i) {
    buffers[kTextureBinding + i] =
        i < launch.textureCount
            ? VkDescriptorBufferInfo{ownedBuffer(launch.textures[i], ctx, texelBytes, kPoint, kCall,
                                                 "texture")
                                         .buffer,
                                     0, texelBytes}
            : buffers[kTriangleBinding];
  }
  if (pixelBytes == 0) return;  // nothing to shade
  if (context.pending.size() >= kMaxPending) waitForQueue(context, kPoint, "vkWaitForFences");
  if (context.pipeline == VK_NULL_HANDLE) makePipeline(context, kPoint);

  Submission s;
  if (!context.idleDescriptors.empty()) {
    s.descriptors = context.idleDescriptors.back();
    context.idleDescriptors.pop_back();
  } else {
    VkDescriptorSetAllocateInfo allocate{};
    allocate.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    allocate.descriptorPool = context.descriptorPool;
    allocate.descriptorSetCount = 1;
    allocate.pSetLayouts = &context.setLayout;
    check(vk_.vkAllocateDescriptorSets(context.device, &allocate, &s.descriptors), kPoint,
          "vkAllocateDescriptorSets");
  }
  VkWriteDescriptorSet writes[3]{};
  for (uint32_t i = 0; i < 3; ++i) {
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = s.descriptors;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = i == kTextureBinding ? raster::kMaxTextures : 1;
    writes[i].descriptorType = bindingType(i);
    writes[i].pBufferInfo = &buffers[i];
  }
  vk_.vkUpdateDescriptorSets(context.device, 3, writes, 0, nullptr);
  try {
    checkValidation(kPoint, "vkUpdateDescriptorSets");
    s.commands = beginCommands(context, kPoint);
  } catch (...) {
    release(context, s);
    throw;
  }
  const uint32_t push[6] = {launch.textureCount, launch.textureSize,   launch.width,
                            launch.height,       launch.triangleCount, launch.corruptXor};
  const auto groups = [](uint32_t pixels) { return (pixels + kRasterGroup - 1) / kRasterGroup; };
  vk_.vkCmdBindPipeline(s.commands, VK_PIPELINE_BIND_POINT_COMPUTE, context.pipeline);
  vk_.vkCmdBindDescriptorSets(s.commands, VK_PIPELINE_BIND_POINT_COMPUTE, context.pipelineLayout, 0,
                              1, &s.descriptors, 0, nullptr);
  vk_.vkCmdPushConstants(s.commands, context.pipelineLayout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                         sizeof push, push);
  vk_.vkCmdDispatch(s.commands, groups(launch.width), groups(launch.height), 1);
  checkValidation(kPoint, kCall);
  submit(context, s, kPoint);
}

void VulkanBackend::synchronize(ContextId ctx) {
  Context& context = liveContext(ctx, CallPoint::Sync, "vkWaitForFences");
  waitForQueue(context, CallPoint::Sync, "vkWaitForFences");
}

MemoryInUse VulkanBackend::memoryInUse() const {
  return MemoryInUse{bytesInUse_, buffers_.size(), contexts_.size()};
}

}  // namespace

std::unique_ptr<Backend> makeVulkanBackend(const BackendOptions& options) {
  return std::make_unique<VulkanBackend>(options);
}

}  // namespace gpufuzz
