// OpenClDevicesTest.cpp: `--device` matching over made-up device lists (no OpenCL call).
#include <gtest/gtest.h>

#include "renderer/device/DeviceError.h"
#include "renderer/opencl/OpenClDevices.h"

namespace gpufuzz {
namespace {

OpenClDevice device(std::string platform, std::string vendor, std::string name, bool gpu) {
  OpenClDevice d;
  d.platformName = std::move(platform);
  d.platformVendor = std::move(vendor);
  d.deviceName = std::move(name);
  d.driverVersion = "1.0";
  d.gpu = gpu;
  return d;
}

const std::vector<OpenClDevice> kDevices = {
    device("Portable Computing Language", "The pocl project", "pthread-haswell-AMD EPYC", false),
    device("rusticl", "Mesa/X.org", "llvmpipe (LLVM 15.0.6, 256 bits)", false),
    device("NVIDIA CUDA", "NVIDIA Corporation", "NVIDIA H200", true),
};

TEST(OpenClDevices, TextMatchesPlatformNameVendorOrDeviceIgnoringCase) {
  EXPECT_EQ(selectOpenClDevice(kDevices, "pocl").platformName, "Portable Computing Language");
  EXPECT_EQ(selectOpenClDevice(kDevices, "RUSTICL").platformName, "rusticl");
  EXPECT_EQ(selectOpenClDevice(kDevices, "llvmpipe").platformName, "rusticl");
  EXPECT_EQ(selectOpenClDevice(kDevices, "mesa").platformName, "rusticl");
  EXPECT_EQ(selectOpenClDevice(kDevices, "nvidia").deviceName, "NVIDIA H200");
  EXPECT_EQ(selectOpenClDevice(kDevices, "h200").platformName, "NVIDIA CUDA");
}

TEST(OpenClDevices, NoTextPicksTheFirstGpuElseTheFirstDevice) {
  EXPECT_EQ(selectOpenClDevice(kDevices, "").deviceName, "NVIDIA H200");
  const std::vector<OpenClDevice> cpus(kDevices.begin(), kDevices.begin() + 2);
  EXPECT_EQ(selectOpenClDevice(cpus, "").platformName, "Portable Computing Language");
}

TEST(OpenClDevices, NoMatchIsUnavailableAndListsWhatThereIs) {
  try {
    selectOpenClDevice(kDevices, "intel");
    FAIL() << "no device should match";
  } catch (const DeviceUnavailable& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("--device 'intel'"), std::string::npos) << message;
    EXPECT_NE(message.find("rusticl / llvmpipe (LLVM 15.0.6, 256 bits) / driver 1.0"),
              std::string::npos)
        << message;
  }
}

TEST(OpenClDevices, IdentityNamesPlatformDeviceAndDriver) {
  EXPECT_EQ(kDevices[2].identity(), "NVIDIA CUDA / NVIDIA H200 / driver 1.0");
}

}  // namespace
}  // namespace gpufuzz
