// VulkanPreload.h: maps the Vulkan loader, the installed drivers and the validation layer into
// the process without calling any of them.
//
// Loading them is most of what a fresh process pays before its first Vulkan device (LLVM, which
// lavapipe and radv link, alone is ~70 ms here; the layer ~25 ms), and the loader unloads drivers
// and layers again at vkDestroyInstance. Preloaded in a fork server before it forks, every child
// starts with them mapped; preloaded in a runner, a later instance finds them still there. No
// Vulkan call is made, so a process that preloads may still fork children that use Vulkan.
#pragma once

namespace gpufuzz {

/// Idempotent and never fails: a library that cannot be loaded is left to the loader to report.
/// The manifests are those the loader reads: VK_DRIVER_FILES / VK_ICD_FILENAMES when set, else
/// the icd.d folders; the validation layer's from VK_ADD_LAYER_PATH / VK_LAYER_PATH and the
/// explicit_layer.d folders.
void preloadVulkanLibraries();

}  // namespace gpufuzz
