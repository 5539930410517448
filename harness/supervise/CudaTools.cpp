// CudaTools.cpp: looking for the CUDA toolkit's programs.
#include "harness/supervise/CudaTools.h"

#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace gpufuzz {

bool isExecutable(const std::string& path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0;
}

std::optional<std::string> findCudaTool(std::string_view name) {
  const std::string file = "/" + std::string(name);
  std::vector<std::string> candidates;
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string_view rest = path;
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      candidates.push_back(std::string(rest.substr(0, colon)) + file);
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
  }
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr) {
    candidates.push_back(std::string(home) + "/bin" + file);
  }
  candidates.push_back("/usr/local/cuda/bin" + file);
  for (const std::string& candidate : candidates) {
    if (isExecutable(candidate)) return candidate;
  }
  return std::nullopt;
}

}  // namespace gpufuzz
