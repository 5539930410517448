// vulkan-device-target: the device model (contexts and buffers) over Vulkan, linked against the
// Vulkan loader, as a user's program would be. It calls no mayFail(): the layer that gpufuzz
// enables in targets fails its marked Vulkan calls (docs/failures.md, Targets). A context is a
// logical device; a buffer, a buffer bound to memory of its own. Each error path destroys what
// its operation made, so every marked run passes.
//
//   gpufuzz sweep --model device --target vulkan-device-target FILE
#include <vulkan/vulkan.h>

#include <map>
#include <memory>
#include <string>

#include "gpufuzz/target.hpp"

namespace {

namespace gt = gpufuzz::target;

void check(VkResult result, const char* call) {
  if (result != VK_SUCCESS) {
    throw gt::Failure("error", std::string(call) + ": VkResult " + std::to_string(result));
  }
}

struct Buffer {
  std::string context;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
};

class VulkanDeviceTarget final : public gt::Target {
 public:
  VulkanDeviceTarget() {
    handle("ctx_create", [this](const gt::Operation& op) { create(op.name()); });
    handle("buf_create", [this](const gt::Operation& op) {
      const std::string& owner = op.names.at(0);
      const VkDevice device = devices_.at(owner);
      Buffer b{owner};
      VkBufferCreateInfo info{};
      info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
      info.size = static_cast<VkDeviceSize>(op.arg("bytes", 256));
      info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
      check(vkCreateBuffer(device, &info, nullptr, &b.buffer), "vkCreateBuffer");
      VkMemoryRequirements needs{};
      vkGetBufferMemoryRequirements(device, b.buffer, &needs);
      VkMemoryAllocateInfo alloc{};
      alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
      alloc.allocationSize = needs.size;
      alloc.memoryTypeIndex = memoryType(needs.memoryTypeBits);
      VkResult result = vkAllocateMemory(device, &alloc, nullptr, &b.memory);
      if (result == VK_SUCCESS) result = vkBindBufferMemory(device, b.buffer, b.memory, 0);
      if (result != VK_SUCCESS) {  // the buffer was never made
        vkDestroyBuffer(device, b.buffer, nullptr);
        vkFreeMemory(device, b.memory, nullptr);
        check(result, "vkAllocateMemory or vkBindBufferMemory");
      }
      buffers_[op.names.at(1)] = b;
    });
    handle("buf_destroy", [this](const gt::Operation& op) {
      const Buffer b = buffers_.at(op.name());
      buffers_.erase(op.name());
      const auto owner = devices_.find(b.context);
      if (owner == devices_.end()) return;  // destroyed with its device below
      vkDestroyBuffer(owner->second, b.buffer, nullptr);
      vkFreeMemory(owner->second, b.memory, nullptr);
    });
    handle("ctx_destroy", [this](const gt::Operation& op) {
      const VkDevice device = devices_.at(op.name());
      devices_.erase(op.name());
      const VkResult idle = vkDeviceWaitIdle(device);
      // A device is destroyed after its objects, whether or not the wait failed.
      for (auto it = buffers_.begin(); it != buffers_.end();) {
        if (it->second.context != op.name()) {
          ++it;
          continue;
        }
        vkDestroyBuffer(device, it->second.buffer, nullptr);
        vkFreeMemory(device, it->second.memory, nullptr);
        it = buffers_.erase(it);
      }
      vkDestroyDevice(device, nullptr);
      check(idle, "vkDeviceWaitIdle");
    });
  }

  ~VulkanDeviceTarget() override {
    if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
  }

  void start(const gt::Sequence&) override {
    if (instance_ != VK_NULL_HANDLE) return;
    VkApplicationInfo app{};
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.apiVersion = VK_API_VERSION_1_1;
    VkInstanceCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    info.pApplicationInfo = &app;
    check(vkCreateInstance(&info, nullptr, &instance_), "vkCreateInstance");
    uint32_t count = 1;
    const VkResult listed = vkEnumeratePhysicalDevices(instance_, &count, &physical_);
    if ((listed != VK_SUCCESS && listed != VK_INCOMPLETE) || count == 0) {
      throw gt::Failure("error", "no Vulkan device");
    }
    vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
  }

  std::optional<std::string> leaks() override {
    if (devices_.empty() && buffers_.empty()) return std::nullopt;
    return std::to_string(devices_.size()) + " devices and " + std::to_string(buffers_.size()) +
           " buffers still held";
  }

 private:
  void create(const std::string& name) {
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo queue{};
    queue.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    queue.queueFamilyIndex = 0;
    queue.queueCount = 1;
    queue.pQueuePriorities = &priority;
    VkDeviceCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    info.queueCreateInfoCount = 1;
    info.pQueueCreateInfos = &queue;
    VkDevice device = VK_NULL_HANDLE;
    check(vkCreateDevice(physical_, &info, nullptr, &device), "vkCreateDevice");
    devices_[name] = device;
  }

  uint32_t memoryType(uint32_t allowed) const {
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
      if ((allowed & (1u << i)) != 0) return i;
    }
    throw gt::Failure("error", "no memory type for a buffer");
  }

  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  std::map<std::string, VkDevice> devices_;
  std::map<std::string, Buffer> buffers_;
};

}  // namespace

int main(int argc, char** argv) {
  return gt::main(argc, argv, "vulkan-device-target 1.0",
                  [] { return std::make_unique<VulkanDeviceTarget>(); });
}
