// PlanLookup.cpp: reading plan files and finding the built-in plans by name.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "base/InputError.h"
#include "renderer/faults/FaultPlan.h"

namespace gpufuzz {

namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 4> kBuiltinPlans = {
    "none",
    "max-26.5.0",
    "max-26.6.0",
    "strict-lifetimes",
};

// In order: an explicit override, the copy the build puts next to the executables (so an
// installed or moved build keeps working), then the source tree (so a test binary run from
// anywhere finds them).
std::vector<fs::path> builtinPlanDirs(const std::string& planDir) {
  std::vector<fs::path> dirs;
  if (!planDir.empty()) dirs.emplace_back(planDir);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back(exe.parent_path() / "plans");
  dirs.emplace_back(GPUFUZZ_PLAN_SOURCE_DIR);
  return dirs;
}

FaultPlan findBuiltinPlan(const std::string& name, const std::string& planDir) {
  std::string searched;
  for (const fs::path& dir : builtinPlanDirs(planDir)) {
    const fs::path file = dir / (name + ".plan");
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) {
      FaultPlan plan = loadFaultPlanFile(file.string());
      plan.name = name;
      return plan;
    }
    searched += (searched.empty() ? "" : ", ") + dir.string();
  }
  throw InputError("built-in fault plan " + name + " not found in " + searched +
                   "; set GPUFUZZ_PLAN_DIR to the directory holding " + name + ".plan");
}

std::string builtinList() {
  std::string out;
  for (std::string_view name : kBuiltinPlans) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace

std::span<const std::string_view> builtinPlanNames() {
  return kBuiltinPlans;
}

void warmBuiltinPlans() {
  for (const std::string_view name : kBuiltinPlans) {
    try {
      loadFaultPlan(name);
    } catch (const InputError&) {
      // Not cached: the run that names the plan reads it again and reports why it cannot.
    }
  }
}

FaultPlan loadFaultPlanFile(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw InputError("cannot read fault plan " + path + ": it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError("cannot read fault plan " + path + ": " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parseFaultPlan(text.str(), path);
}

FaultPlan loadFaultPlan(std::string_view nameOrPath) {
  const std::string name(nameOrPath);
  if (std::find(kBuiltinPlans.begin(), kBuiltinPlans.end(), nameOrPath) != kBuiltinPlans.end()) {
    // A built-in plan is a file of the build: read once per process and $GPUFUZZ_PLAN_DIR. A
    // fork server reads them before it forks (warmBuiltinPlans), so that no child reads them.
    const char* env = std::getenv("GPUFUZZ_PLAN_DIR");
    const std::string planDir = env != nullptr ? env : "";
    static std::mutex mutex;
    static std::map<std::pair<std::string, std::string>, FaultPlan> read;
    const auto key = std::make_pair(name, planDir);
    {
      const std::lock_guard lock(mutex);
      if (const auto it = read.find(key); it != read.end()) return it->second;
    }
    FaultPlan plan = findBuiltinPlan(name, planDir);
    const std::lock_guard lock(mutex);
    return read.emplace(key, std::move(plan)).first->second;
  }
  std::error_code ec;
  if (!fs::exists(name, ec)) {
    throw InputError("no fault plan " + name + ": not a built-in (" + builtinList() +
                     ") and no such file");
  }
  return loadFaultPlanFile(name);
}

}  // namespace gpufuzz
