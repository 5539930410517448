// VulkanBackend.h: the vulkan backend, the Backend contract on Vulkan compute (no window).
//
// One VkInstance per backend; each context is a VkDevice with one compute queue, its own command
// pool, descriptor pool and the raster pipeline (the shader of Raster.comp, embedded as SPIR-V,
// compiled by the driver at the context's first launch). Buffers are VkBuffers bound to their own
// VkDeviceMemory (device-local where the device has it). Copies go through host-visible staging
// buffers, as a renderer's uploads and read-backs do; copies and launches are recorded into a
// command buffer each and submitted without waiting, a fence per submission tracking what is
// pending. What a submission held (command buffer, fence, descriptor set, staging memory) is
// reused by later ones of its context once a wait has seen its fence signalled, never before.
// copyToHost and synchronize wait for the context's fences; a context's destroy waits
// for them too, then destroys what the backend made on the device, then the device. What the
// caller allocated is the caller's to free first: vkDestroyDevice with its buffers alive is the
// caller's error, and the validation layer says so.
//
// Validation (the Khronos layer, VK_LAYER_KHRONOS_validation, with synchronization validation):
// every message of error severity is caught while the call that caused it is still in the layer,
// which is told to skip the call where it can; the backend then throws InvalidUse naming the call,
// the VUID and the layer's message, so the run stops before the call can do what the layer
// predicts (freeing memory a dispatch still writes crashes lavapipe). Warnings and performance
// messages are not failures. After an InvalidUse the backend only tears itself down.
//
// A buffer whose device was destroyed is never handed to Vulkan again: freeing it throws
// DeviceError naming it. Every failed call throws DeviceError naming the call and the VkResult.
// Not thread-safe: calls come one at a time, from any thread (the Device seam locks them), but
// their Vulkan calls overlap other threads' (RuntimeSeam.h). Each context has its own device,
// queue and pools, used only by its own calls, which never overlap (docs/sequences.md, Threads):
// so the externally synchronized objects need no lock of their own. A free of a buffer may meet
// its context's destroy: the free and vkDestroyDevice each keep the seam's lock, so a free never
// runs in a destroyed device. The layer's reports are taken per thread. The loader is opened at
// run time (VulkanApi.h).
#pragma once

#include <memory>

#include "renderer/Backends.h"

namespace gpufuzz {

/// --device TEXT picks the physical device whose name or driver name contains TEXT, ignoring case
/// (default: the first GPU, else the first device, lavapipe); --validation on|off (default: on
/// where the layer is installed). Throws DeviceUnavailable when the loader, a usable device
/// (compute queue, shaderInt64, dynamic indexing of storage buffer arrays, scalarBlockLayout, a
/// maxUniformBufferRange of 48 KiB for the triangle list) or the validation layer asked for is
/// missing. Calls Vulkan: never in a process that forks children afterwards (the registry marks
/// it probeInChild). description() names device, driver, Vulkan version and the layer's version
/// (or "validation off").
std::unique_ptr<Backend> makeVulkanBackend(const BackendOptions& options);

}  // namespace gpufuzz
