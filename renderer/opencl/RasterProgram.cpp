// RasterProgram.cpp: building the raster program, from source once per device and process, from
// the kept binary after that.
#include "renderer/opencl/RasterProgram.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "renderer/device/DeviceError.h"

namespace gpufuzz::opencl {

namespace {

struct Cache {
  std::mutex mutex;
  std::map<std::pair<cl_device_id, const char*>, std::vector<unsigned char>> binaries;
  ProgramBuildCosts costs;
};

Cache& cache() {
  static Cache c;
  return c;
}

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

std::string buildLog(const OpenClApi& api, cl_program program, cl_device_id device) {
  size_t size = 0;
  if (api.getProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) !=
          CL_SUCCESS ||
      size == 0) {
    return {};
  }
  std::string log(size, '\0');
  api.getProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  return log;
}

/// The program's binary for its one device, or empty when the runtime offers none.
std::vector<unsigned char> binaryOf(const OpenClApi& api, cl_program program) {
  size_t size = 0;
  if (api.getProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) !=
          CL_SUCCESS ||
      size == 0) {
    return {};
  }
  std::vector<unsigned char> binary(size);
  unsigned char* data = binary.data();
  if (api.getProgramInfo(program, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr) != CL_SUCCESS) {
    return {};
  }
  return binary;
}

/// FNV-1a: stable across builds and machines, unlike std::hash.
uint64_t fnv1a(std::string_view text, uint64_t h = 0xcbf29ce484222325ULL) {
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string deviceText(const OpenClApi& api, cl_device_id device, cl_device_info what) {
  size_t size = 0;
  if (api.getDeviceInfo(device, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string text(size, '\0');
  api.getDeviceInfo(device, what, size, text.data(), nullptr);
  return text;
}

/// Where the binary for this device and this source is kept between processes, or empty when
/// the cache is off (GPUFUZZ_OPENCL_CACHE=off) or has no home.
std::filesystem::path diskCachePath(const OpenClApi& api, cl_device_id device, const char* source,
                                    const char* cacheName) {
  std::filesystem::path dir;
  if (const char* env = std::getenv("GPUFUZZ_OPENCL_CACHE"); env != nullptr && *env != '\0') {
    if (std::string_view(env) == "off") return {};
    dir = env;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    dir = std::filesystem::path(xdg) / "gpufuzz" / "opencl";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    dir = std::filesystem::path(home) / ".cache" / "gpufuzz" / "opencl";
  } else {
    return {};
  }
  uint64_t key = fnv1a(source);
  for (const cl_device_info what : {CL_DEVICE_NAME, CL_DEVICE_VERSION, CL_DRIVER_VERSION}) {
    key = fnv1a(deviceText(api, device, what), key);
  }
  char name[64];
  std::snprintf(name, sizeof name, "%s-%016llx.bin", cacheName,
                static_cast<unsigned long long>(key));
  return dir / name;
}

std::vector<unsigned char> readDiskCache(const std::filesystem::path& path) {
  if (path.empty()) return {};
  std::ifstream in(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in), {});
}

/// Written beside its name and renamed into place, so concurrent children never read half a file.
void writeDiskCache(const std::filesystem::path& path, const std::vector<unsigned char>& binary) {
  if (path.empty() || binary.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  const std::filesystem::path tmp = path.string() + "." + std::to_string(::getpid()) + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(reinterpret_cast<const char*>(binary.data()),
              static_cast<std::streamsize>(binary.size()));
    if (!out) return;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

[[noreturn]] void fail(CallPoint point, const std::string& call, cl_int code,
                       const std::string& detail = {}) {
  throw DeviceError(point, call + ": " + clErrorName(code) + (detail.empty() ? "" : ": " + detail));
}

/// A program built from `binary`, or null (and the status) when the runtime refuses it.
cl_program buildFromBinary(const OpenClApi& api, cl_context context, cl_device_id device,
                           const std::vector<unsigned char>& binary, cl_int& status) {
  const unsigned char* data = binary.data();
  const size_t size = binary.size();
  cl_int binaryStatus = CL_SUCCESS;
  cl_program program =
      api.createProgramWithBinary(context, 1, &device, &size, &data, &binaryStatus, &status);
  if (status == CL_SUCCESS && binaryStatus != CL_SUCCESS) status = binaryStatus;
  if (status != CL_SUCCESS) {
    if (program != nullptr) api.releaseProgram(program);
    return nullptr;
  }
  status = api.buildProgram(program, 1, &device, "", nullptr, nullptr);
  if (status != CL_SUCCESS) {
    api.releaseProgram(program);
    return nullptr;
  }
  return program;
}

}  // namespace

cl_program buildRasterProgram(const OpenClApi& api, cl_context context, cl_device_id device,
                              CallPoint point) {
  return buildCachedProgram(api, context, device, kRasterSource, "raster", point);
}

cl_program buildCachedProgram(const OpenClApi& api, cl_context context, cl_device_id device,
                              const char* source, const char* cacheName, CallPoint point) {
  Cache& c = cache();
  std::vector<unsigned char> binary;
  {
    const std::lock_guard lock(c.mutex);
    auto it = c.binaries.find({device, source});
    if (it != c.binaries.end()) binary = it->second;
  }
  const auto start = std::chrono::steady_clock::now();
  std::filesystem::path diskPath;
  bool fromDisk = false;
  if (binary.empty()) {
    diskPath = diskCachePath(api, device, source, cacheName);
    binary = readDiskCache(diskPath);
    fromDisk = !binary.empty();
  }
  cl_int status = CL_SUCCESS;
  cl_program program = nullptr;
  if (!binary.empty()) {
    program = buildFromBinary(api, context, device, binary, status);
    // A kept binary the runtime no longer takes (a new driver) is rebuilt from source; one kept
    // in this process must work, since this runtime made it.
    if (program == nullptr && !fromDisk) fail(point, "clBuildProgram (from binary)", status);
  }
  const bool fromBinary = program != nullptr;
  if (!fromBinary) {
    program = api.createProgramWithSource(context, 1, &source, nullptr, &status);
    if (status != CL_SUCCESS) fail(point, "clCreateProgramWithSource", status);
    status = api.buildProgram(program, 1, &device, "", nullptr, nullptr);
    if (status != CL_SUCCESS) {
      const std::string log = buildLog(api, program, device);
      api.releaseProgram(program);
      fail(point, "clBuildProgram", status, log);
    }
    binary = binaryOf(api, program);
    if (diskPath.empty()) diskPath = diskCachePath(api, device, source, cacheName);
    writeDiskCache(diskPath, binary);
  }
  const double ms = msSince(start);
  const std::lock_guard lock(c.mutex);
  if (fromBinary) {
    ++c.costs.fromBinary;
    c.costs.binaryMs += ms;
  } else {
    ++c.costs.fromSource;
    c.costs.sourceMs += ms;
  }
  if (!binary.empty()) c.binaries.emplace(std::pair{device, source}, std::move(binary));
  return program;
}

ProgramBuildCosts programBuildCosts() {
  const std::lock_guard lock(cache().mutex);
  return cache().costs;
}

}  // namespace gpufuzz::opencl
