#include "renderer/device/LibraryPreload.h"

#include <dlfcn.h>

#include <sstream>

namespace gpufuzz {

std::vector<std::string> pathList(const char* text) {
  std::vector<std::string> parts;
  if (text == nullptr) return parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ':')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

std::vector<std::filesystem::path> filesIn(const std::vector<std::string>& places,
                                           std::string_view extension) {
  namespace fs = std::filesystem;
  std::vector<fs::path> found;
  for (const std::string& place : places) {
    std::error_code ec;
    if (fs::is_directory(place, ec)) {
      for (const auto& entry : fs::directory_iterator(place, ec)) {
        if (entry.path().extension() == extension) found.push_back(entry.path());
      }
    } else if (fs::is_regular_file(place, ec)) {
      found.emplace_back(place);
    }
  }
  return found;
}

bool holdLibrary(const std::string& library) {
  return ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL) != nullptr;
}

}  // namespace gpufuzz
