// VulkanValidation.h: a VkInstance under the Khronos validation layer, and the layer's messages.
//
// The contract:
// - makeInstance() makes the instance with the layer, synchronization validation and a debug
//   messenger when validation is on; without the layer installed, --validation on is
//   DeviceUnavailable. It resolves the instance's entry points (VulkanApi.h).
// - ValidationMessages catches each message of error severity while the call that caused it is
//   still in the layer, and answers VK_TRUE, which asks the layer to skip that call. take() hands
//   over the first one since the last take(): the one its own thread caused when calls come from
//   several threads at once (perThread), else the first of any thread.
// - Warnings and performance messages are never errors; GPUFUZZ_VULKAN_LOG=1 prints them all.
// Used by the vulkan backend (a VkDevice per context) and the vulkan model's executor (one
// VkDevice per process).
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "renderer/vulkan/VulkanApi.h"

namespace gpufuzz::vk {

class ValidationMessages {
 public:
  struct Error {
    std::string vuid;
    std::string message;
  };

  explicit ValidationMessages(bool perThread = false);

  static VKAPI_ATTR VkBool32 VKAPI_CALL callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                 void* self);

  /// The layer's text without its header (object handles, message id) and the spec's quote.
  static std::string essence(std::string message);

  /// The first error since the last take() (of this thread, when perThread).
  std::optional<Error> take();

 private:
  /// GPUFUZZ_VULKAN_LOG set: every message the layer sends goes to stderr, warnings included.
  const bool log_;
  const bool perThread_;
  std::mutex mutex_;
  std::map<std::thread::id, Error> first_;

 public:
  ValidationMessages(const ValidationMessages&) = delete;
  ValidationMessages& operator=(const ValidationMessages&) = delete;
};

/// An instance, its entry points and its messenger; destroy() ends them.
struct Instance {
  VkInstance instance = VK_NULL_HANDLE;
  InstanceApi api;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  bool validation = false;
  /// The layer's spec version (VK_MAKE_API_VERSION); 0 without the layer.
  uint32_t layerVersion = 0;
  /// ", validation layer 1.3.239 (synchronization validation on)" or ", validation off".
  std::string validationText;

  void destroy();
};

/// `validation`: on, off, or (unset) on where the layer is installed. `messages` receives the
/// layer's messages for as long as the instance lives. Throws DeviceUnavailable.
Instance makeInstance(const Loader& loader, std::optional<bool> validation,
                      ValidationMessages& messages);

/// "1.3.239".
std::string versionText(uint32_t version);

}  // namespace gpufuzz::vk
