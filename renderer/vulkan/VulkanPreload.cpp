// VulkanPreload.cpp: dlopen of what the Vulkan loader would load, found through its manifests.
#include "renderer/vulkan/VulkanPreload.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "renderer/device/LibraryPreload.h"

namespace gpufuzz {

namespace {

namespace fs = std::filesystem;

/// The "library_path" of a manifest as the loader resolves it: a name without a slash through the
/// library search path, a relative path against the manifest's folder.
std::string libraryOf(const fs::path& manifest) {
  std::ifstream in(manifest);
  std::stringstream text;
  text << in.rdbuf();
  const std::string json = text.str();
  const std::string key = "\"library_path\"";
  std::size_t at = json.find(key);
  if (at == std::string::npos) return "";
  at = json.find('"', json.find(':', at + key.size()) + 1);
  const std::size_t end = json.find('"', at + 1);
  if (at == std::string::npos || end == std::string::npos) return "";
  const std::string path = json.substr(at + 1, end - at - 1);
  if (path.find('/') == std::string::npos || path.front() == '/') return path;
  return (manifest.parent_path() / path).string();
}

void preloadOnce() {
  if (!holdLibrary("libvulkan.so.1")) return;
  std::vector<std::string> drivers = pathList(std::getenv("VK_DRIVER_FILES"));
  if (drivers.empty()) drivers = pathList(std::getenv("VK_ICD_FILENAMES"));
  if (drivers.empty()) {
    drivers = {"/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d", "/usr/share/vulkan/icd.d"};
  }
  std::vector<std::string> layers = pathList(std::getenv("VK_ADD_LAYER_PATH"));
  for (const std::string& place : pathList(std::getenv("VK_LAYER_PATH")))
    layers.push_back(place);
  for (const char* place :
       {"/etc/vulkan/explicit_layer.d", "/usr/local/share/vulkan/explicit_layer.d",
        "/usr/share/vulkan/explicit_layer.d"}) {
    layers.emplace_back(place);
  }
  std::vector<fs::path> wanted = filesIn(drivers, ".json");
  for (const fs::path& layer : filesIn(layers, ".json")) {
    if (layer.filename().string().find("khronos_validation") != std::string::npos) {
      wanted.push_back(layer);
    }
  }
  for (const fs::path& manifest : wanted) {
    const std::string library = libraryOf(manifest);
    if (!library.empty()) holdLibrary(library);
  }
}

}  // namespace

void preloadVulkanLibraries() {
  static const bool done = (preloadOnce(), true);
  (void)done;
}

}  // namespace gpufuzz
