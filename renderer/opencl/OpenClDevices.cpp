// OpenClDevices.cpp: enumerating platforms and devices, and matching `--device`.
#include "renderer/opencl/OpenClDevices.h"

#include "renderer/Text.h"
#include "renderer/device/DeviceError.h"
#include "renderer/device/DeviceIndex.h"

namespace gpufuzz {

namespace {

template <typename Handle, typename Info, typename Query>
std::string infoString(Query query, Handle handle, Info param) {
  size_t size = 0;
  if (query(handle, param, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string text(size, '\0');
  if (query(handle, param, size, text.data(), nullptr) != CL_SUCCESS) return {};
  while (!text.empty() && (text.back() == '\0' || text.back() == ' '))
    text.pop_back();
  return text;
}

std::string listing(const std::vector<OpenClDevice>& devices) {
  std::string text;
  for (const OpenClDevice& d : devices) {
    text += "\n  " + d.identity() + " (vendor " + d.platformVendor + ")";
  }
  return text;
}

}  // namespace

std::string OpenClDevice::identity() const {
  return platformName + " / " + deviceName + " / driver " + driverVersion;
}

std::vector<OpenClDevice> listOpenClDevices(const OpenClApi& api) {
  cl_uint platformCount = 0;
  const cl_int counted = api.getPlatformIDs(0, nullptr, &platformCount);
  if (counted == -1001 || (counted == CL_SUCCESS && platformCount == 0)) {
    throw DeviceUnavailable(
        "no OpenCL platform: the ICD loader found no runtime (/etc/OpenCL/vendors, or "
        "OCL_ICD_VENDORS); install one (Debian: pocl-opencl-icd) or use the sim backend");
  }
  if (counted != CL_SUCCESS) {
    throw DeviceUnavailable("OpenCL unusable: clGetPlatformIDs: " + clErrorName(counted));
  }
  std::vector<cl_platform_id> platforms(platformCount);
  if (const cl_int r = api.getPlatformIDs(platformCount, platforms.data(), nullptr);
      r != CL_SUCCESS) {
    throw DeviceUnavailable("OpenCL unusable: clGetPlatformIDs: " + clErrorName(r));
  }
  std::vector<OpenClDevice> devices;
  for (cl_platform_id platform : platforms) {
    cl_uint deviceCount = 0;
    if (api.getDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &deviceCount) != CL_SUCCESS ||
        deviceCount == 0) {
      continue;  // CL_DEVICE_NOT_FOUND: a platform with nothing to drive here
    }
    std::vector<cl_device_id> ids(deviceCount);
    if (api.getDeviceIDs(platform, CL_DEVICE_TYPE_ALL, deviceCount, ids.data(), nullptr) !=
        CL_SUCCESS) {
      continue;
    }
    for (cl_device_id id : ids) {
      OpenClDevice d;
      d.platform = platform;
      d.device = id;
      d.platformName = infoString(api.getPlatformInfo, platform, CL_PLATFORM_NAME);
      d.platformVendor = infoString(api.getPlatformInfo, platform, CL_PLATFORM_VENDOR);
      d.platformVersion = infoString(api.getPlatformInfo, platform, CL_PLATFORM_VERSION);
      d.deviceName = infoString(api.getDeviceInfo, id, CL_DEVICE_NAME);
      d.driverVersion = infoString(api.getDeviceInfo, id, CL_DRIVER_VERSION);
      cl_device_type type = 0;
      api.getDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
      d.gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
      cl_ulong maxAlloc = 0;
      api.getDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof maxAlloc, &maxAlloc, nullptr);
      d.maxAllocBytes = maxAlloc;
      devices.push_back(std::move(d));
    }
  }
  if (devices.empty()) {
    throw DeviceUnavailable("no OpenCL device: " + std::to_string(platformCount) +
                            " platform(s), none with a device (rusticl needs "
                            "RUSTICL_ENABLE=llvmpipe to offer its CPU device)");
  }
  return devices;
}

OpenClDevice selectOpenClDevice(const std::vector<OpenClDevice>& devices, std::string_view text) {
  const auto matches = [text](const OpenClDevice& d) {
    return text.empty() || containsIgnoringCase(d.platformName, text) ||
           containsIgnoringCase(d.platformVendor, text) || containsIgnoringCase(d.deviceName, text);
  };
  // Among the GPUs that match, the one GPUFUZZ_DEVICE_INDEX names (DeviceIndex.h).
  std::vector<const OpenClDevice*> gpus;
  for (const OpenClDevice& d : devices) {
    if (d.gpu && matches(d)) gpus.push_back(&d);
  }
  if (!gpus.empty()) return *gpus[deviceIndexAmong(gpus.size())];
  for (const OpenClDevice& d : devices) {
    if (matches(d)) return d;
  }
  throw DeviceUnavailable("no OpenCL device matches --device '" + std::string(text) +
                          "'; there are:" + listing(devices));
}

}  // namespace gpufuzz
