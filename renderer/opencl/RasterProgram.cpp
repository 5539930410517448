// RasterProgram.cpp: building the raster program, from source once per device and process, from
// the kept binary after that.
#include "renderer/opencl/RasterProgram.h"

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "renderer/device/DeviceError.h"

namespace gpufuzz::opencl {

namespace {

struct Cache {
  std::mutex mutex;
  std::map<cl_device_id, std::vector<unsigned char>> binaries;
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
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
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
  if (api.getProgramInfo(program, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr) !=
      CL_SUCCESS) {
    return {};
  }
  return binary;
}

[[noreturn]] void fail(CallPoint point, const std::string& call, cl_int code,
                       const std::string& detail = {}) {
  throw DeviceError(point, call + ": " + clErrorName(code) + (detail.empty() ? "" : ": " + detail));
}

}  // namespace

cl_program buildRasterProgram(const OpenClApi& api, cl_context context, cl_device_id device,
                              CallPoint point) {
  Cache& c = cache();
  std::vector<unsigned char> binary;
  {
    const std::lock_guard lock(c.mutex);
    auto it = c.binaries.find(device);
    if (it != c.binaries.end()) binary = it->second;
  }
  const auto start = std::chrono::steady_clock::now();
  cl_int status = CL_SUCCESS;
  cl_program program = nullptr;
  const bool fromBinary = !binary.empty();
  if (fromBinary) {
    const unsigned char* data = binary.data();
    const size_t size = binary.size();
    cl_int binaryStatus = CL_SUCCESS;
    program =
        api.createProgramWithBinary(context, 1, &device, &size, &data, &binaryStatus, &status);
    if (status == CL_SUCCESS && binaryStatus != CL_SUCCESS) status = binaryStatus;
    if (status != CL_SUCCESS) fail(point, "clCreateProgramWithBinary", status);
  } else {
    const char* source = kRasterSource;
    program = api.createProgramWithSource(context, 1, &source, nullptr, &status);
    if (status != CL_SUCCESS) fail(point, "clCreateProgramWithSource", status);
  }
  status = api.buildProgram(program, 1, &device, "", nullptr, nullptr);
  if (status != CL_SUCCESS) {
    const std::string log = buildLog(api, program, device);
    api.releaseProgram(program);
    fail(point, fromBinary ? "clBuildProgram (from binary)" : "clBuildProgram", status, log);
  }
  const double ms = msSince(start);
  std::vector<unsigned char> built = fromBinary ? std::vector<unsigned char>{} : binaryOf(api, program);
  const std::lock_guard lock(c.mutex);
  if (fromBinary) {
    ++c.costs.fromBinary;
    c.costs.binaryMs += ms;
  } else {
    ++c.costs.fromSource;
    c.costs.sourceMs += ms;
    if (!built.empty()) c.binaries.emplace(device, std::move(built));
  }
  return program;
}

ProgramBuildCosts programBuildCosts() {
  const std::lock_guard lock(cache().mutex);
  return cache().costs;
}

}  // namespace gpufuzz::opencl
