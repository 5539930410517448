#include "renderer/opencl/OpenClPreload.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "renderer/device/LibraryPreload.h"

namespace gpufuzz {

namespace {

/// The driver libraries ocl-icd would open, in its search order.
std::vector<std::string> drivers() {
  std::vector<std::string> libraries = pathList(std::getenv("OCL_ICD_FILENAMES"));
  if (!libraries.empty()) return libraries;
  std::vector<std::string> places = pathList(std::getenv("OCL_ICD_VENDORS"));
  if (places.empty()) places = {"/etc/OpenCL/vendors"};
  for (const auto& file : filesIn(places, ".icd")) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);
    const auto first = line.find_first_not_of(" \t");
    const auto last = line.find_last_not_of(" \t\r");
    if (first != std::string::npos) libraries.push_back(line.substr(first, last - first + 1));
  }
  return libraries;
}

void preloadOnce() {
  if (!holdLibrary("libOpenCL.so.1")) return;
  for (const std::string& library : drivers())
    holdLibrary(library);
}

}  // namespace

void preloadOpenClLibraries() {
  static const bool done = (preloadOnce(), true);
  (void)done;
}

}  // namespace gpufuzz
