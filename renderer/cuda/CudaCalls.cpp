// CudaCalls.cpp: the stream-level calls both CUDA backends share.
#include "renderer/cuda/CudaCalls.h"

#include <map>
#include <mutex>
#include <string>

#include "renderer/Raster.h"
#include "renderer/cuda/RasterKernel.h"
#include "renderer/device/DeviceError.h"

namespace gpufuzz::cuda {

CUcontext retainedPrimaryContext(const CudaDriver& driver, CUdevice device) {
  static std::mutex mutex;
  static std::map<CUdevice, CUcontext> retained;
  const std::lock_guard lock(mutex);
  auto it = retained.find(device);
  if (it != retained.end()) return it->second;
  CUcontext context = nullptr;
  const CUresult result = driver.primaryCtxRetain(&context, device);
  if (result != CUDA_SUCCESS) {
    throw DeviceUnavailable("CUDA device " + std::to_string(device) +
                            " unusable: cuDevicePrimaryCtxRetain: " + driver.errorName(result));
  }
  retained.emplace(device, context);
  return context;
}

void check(const CudaDriver& driver, CUresult result, CallPoint point, const char* call) {
  if (result != CUDA_SUCCESS) {
    throw DeviceError(point, std::string(call) + ": " + driver.errorName(result));
  }
}

std::optional<PendingWork> pendingOnStream(const CudaDriver& driver, CUstream stream) {
  const CUresult result = driver.streamQuery(stream);
  if (result == CUDA_SUCCESS) return std::nullopt;
  const std::string state = result == CUDA_ERROR_NOT_READY ? "not complete" : "in an unknown state";
  return PendingWork{"cuStreamSynchronize", "work enqueued before it was " + state +
                                                " (cuStreamQuery: " + driver.errorName(result) +
                                                ")"};
}

void enqueueUpload(const CudaDriver& driver, CUstream stream,
                   std::vector<std::vector<std::byte>>& staged, CUdeviceptr dst,
                   std::span<const std::byte> src) {
  const std::vector<std::byte>& copy = staged.emplace_back(src.begin(), src.end());
  check(driver, driver.memcpyHtoDAsync(dst, copy.data(), copy.size(), stream),
        CallPoint::CopyToDevice, "cuMemcpyHtoDAsync");
}

void downloadAndWait(const CudaDriver& driver, CUstream stream,
                     std::vector<std::vector<std::byte>>& staged, CUdeviceptr src,
                     std::span<std::byte> dst) {
  if (!dst.empty()) {
    check(driver, driver.memcpyDtoHAsync(dst.data(), src, dst.size(), stream),
          CallPoint::CopyToHost, "cuMemcpyDtoHAsync");
  }
  check(driver, driver.streamSynchronize(stream), CallPoint::CopyToHost, "cuStreamSynchronize");
  staged.clear();
}

void enqueueRaster(const CudaDriver& driver, CUfunction kernel, CUstream stream,
                   const RasterLaunch& launch, const LaunchBufferAddress& address,
                   const std::function<void()>& makeCurrent) {
  constexpr CallPoint kPoint = CallPoint::Launch;
  constexpr const char* kCall = "cuLaunchKernel";
  if (launch.textureCount > raster::kMaxTextures) {
    throw DeviceError(kPoint, std::string(kCall) + ": " + std::to_string(launch.textureCount) +
                                  " textures, at most " + std::to_string(raster::kMaxTextures));
  }
  if (launch.textureCount > 0 && launch.textureSize == 0) {
    throw DeviceError(kPoint, std::string(kCall) + ": textures of size 0");
  }

  RasterParams params{};
  const uint64_t pixelBytes = uint64_t{launch.width} * launch.height * sizeof(uint32_t);
  params.framebuffer = address(launch.framebuffer, pixelBytes, "framebuffer");
  const uint64_t triangleBytes = uint64_t{launch.triangleCount} * sizeof(raster::Triangle);
  params.triangles = address(launch.vertices, triangleBytes, "vertex");
  const uint64_t texelBytes = uint64_t{launch.textureSize} * launch.textureSize * sizeof(uint32_t);
  for (uint32_t i = 0; i < launch.textureCount; ++i) {
    params.textures[i] = address(launch.textures[i], texelBytes, "texture");
  }
  params.textureCount = launch.textureCount;
  params.textureSize = launch.textureSize;
  params.width = launch.width;
  params.height = launch.height;
  params.triangleCount = launch.triangleCount;
  params.corruptXor = launch.corruptXor;
  if (pixelBytes == 0) return;  // an empty grid is an invalid launch, and there is nothing to do

  makeCurrent();
  const auto blocks = [](uint32_t pixels) { return (pixels + kRasterBlock - 1) / kRasterBlock; };
  void* args[] = {&params};
  check(driver,
        driver.launchKernel(kernel, blocks(launch.width), blocks(launch.height), 1, kRasterBlock,
                            kRasterBlock, 1, 0, stream, args, nullptr),
        kPoint, kCall);
}

}  // namespace gpufuzz::cuda
