// VulkanPreload.cpp: dlopen of what the Vulkan loader would load, found through its manifests.
#include "renderer/vulkan/VulkanPreload.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gpufuzz {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> split(const char* text) {
  std::vector<std::string> parts;
  if (text == nullptr) return parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ':')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

/// The manifests (*.json) named by an environment variable, or found in its folders.
std::vector<fs::path> manifests(const std::vector<std::string>& places) {
  std::vector<fs::path> found;
  for (const std::string& place : places) {
    std::error_code ec;
    if (fs::is_directory(place, ec)) {
      for (const auto& entry : fs::directory_iterator(place, ec)) {
        if (entry.path().extension() == ".json") found.push_back(entry.path());
      }
    } else if (fs::is_regular_file(place, ec)) {
      found.emplace_back(place);
    }
  }
  return found;
}

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
  constexpr int kFlags = RTLD_NOW | RTLD_LOCAL;
  if (::dlopen("libvulkan.so.1", kFlags) == nullptr) return;
  std::vector<std::string> drivers = split(std::getenv("VK_DRIVER_FILES"));
  if (drivers.empty()) drivers = split(std::getenv("VK_ICD_FILENAMES"));
  if (drivers.empty()) {
    drivers = {"/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d", "/usr/share/vulkan/icd.d"};
  }
  std::vector<std::string> layers = split(std::getenv("VK_ADD_LAYER_PATH"));
  for (const std::string& place : split(std::getenv("VK_LAYER_PATH")))
    layers.push_back(place);
  for (const char* place :
       {"/etc/vulkan/explicit_layer.d", "/usr/local/share/vulkan/explicit_layer.d",
        "/usr/share/vulkan/explicit_layer.d"}) {
    layers.emplace_back(place);
  }
  std::vector<fs::path> wanted = manifests(drivers);
  for (const fs::path& layer : manifests(layers)) {
    if (layer.filename().string().find("khronos_validation") != std::string::npos) {
      wanted.push_back(layer);
    }
  }
  for (const fs::path& manifest : wanted) {
    const std::string library = libraryOf(manifest);
    if (!library.empty()) ::dlopen(library.c_str(), kFlags);  // held for the process's life
  }
}

}  // namespace

void preloadVulkanLibraries() {
  static const bool done = (preloadOnce(), true);
  (void)done;
}

}  // namespace gpufuzz
