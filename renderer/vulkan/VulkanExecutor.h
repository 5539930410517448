// VulkanExecutor.h: the executor of the `vulkan` lifecycle model (model/models/vulkan.model) on
// the vulkan backend, through the loader opened at run time (VulkanApi.h).
//
// The contract (besides ModelExecutor's):
// - One VkInstance (with the validation layer, as --validation says) and one VkDevice with its
//   one queue per executor, made at construction, as an engine makes them once; in --persistent
//   mode it serves many sequences. The shader module and descriptor set layout of the model's
//   kernel (Lifecycle.comp, embedded SPIR-V) are made once too. Every other object is a
//   sequence's, by its name, and is released by the sequence.
// - The oracle of rules: a shadow (VulkanShadow.h) predicts which Vulkan rule a call would break,
//   and the call is made under the layer. When the layer reports that VUID and skips the call,
//   the operation is refused as predicted: nothing of it happened, the run goes on, and the
//   refusal is counted (a summary line per sequence). A refused destroy or free leaves a zombie,
//   which the executor ends after vkDeviceWaitIdle at the sequence's end (leaked()). A predicted
//   breach the layer does not report is a finding: DeviceError "the validation layer did not
//   report VUID-...". A layer message not predicted, or one for a call the layer did not skip, is
//   InvalidUse. Without the layer, for a freed handle, and for a use the layer does not track, the
//   executor refuses the call itself, and the run goes on too.
// - The wait oracle: after vkWaitForFences, vkQueueWaitIdle, vkDeviceWaitIdle and vkWaitSemaphores
//   return, what they waited for must be complete, asked of the runtime (vkGetFenceStatus,
//   vkGetSemaphoreCounterValue); else DeviceError.
// - Contents: memory_read maps the memory and compares it with the shadow's bytes; a difference
//   throws DataMismatch.
// - Threads: threadSafe(). Calls that record, change what is pending, end objects, wait or read
//   memory run under one lock, so the shadow sees the order the layer sees; creating objects runs
//   beside them, under the lock of their command pool or descriptor pool (Vulkan's external
//   synchronization). The queue is only used under the one lock.
#pragma once

#include <memory>
#include <string_view>

#include "renderer/Backends.h"
#include "renderer/device/ExecutorKit.h"

namespace gpufuzz {

/// The executor of model `vulkan` (the only one this backend runs). Throws DeviceUnavailable when
/// the loader, a device with a compute queue and timeline semaphores, or the layer asked for is
/// missing. Calls Vulkan: never in a process that forks children afterwards.
std::unique_ptr<ModelExecutor> makeVulkanExecutor(std::string_view model,
                                                  const BackendOptions& options);

/// The executor's op table, for the test that compares it with model/models/vulkan.model: its
/// operations, and the kinds whose release it overrides, which are all the model's. Calls nothing
/// of Vulkan.
kit::TableShape vulkanExecutorTable();

}  // namespace gpufuzz
