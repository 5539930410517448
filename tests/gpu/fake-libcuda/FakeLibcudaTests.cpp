// FakeLibcudaTests.cpp: the stand-in libcuda.so.1 is what the driver table loads here, and it
// fails loudly on each undefined use it claims to catch; without that, a backend test passing on
// it would say nothing. Runs with the stand-in's folder on LD_LIBRARY_PATH (CMakeLists.txt).
#include <gtest/gtest.h>

#include <cuda.h>

#include <cstring>
#include <vector>

#include "renderer/cuda/CudaDriver.h"
#include "renderer/cuda/RasterKernel.h"

namespace gpufuzz {
namespace {

class FakeLibcuda : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(d_.primaryCtxRetain(&primary_, 0), CUDA_SUCCESS);
    ASSERT_EQ(d_.ctxSetCurrent(primary_), CUDA_SUCCESS);
    ASSERT_EQ(d_.streamCreate(&stream_, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    ASSERT_EQ(d_.memPoolCreate(&pool_, &props), CUDA_SUCCESS);
  }

  CUdeviceptr allocate(size_t bytes) {
    CUdeviceptr address = 0;
    EXPECT_EQ(d_.memAllocFromPoolAsync(&address, bytes, pool_, stream_), CUDA_SUCCESS);
    return address;
  }

  const CudaDriver& d_ = cudaDriver();
  CUcontext primary_ = nullptr;
  CUstream stream_ = nullptr;
  CUmemoryPool pool_ = nullptr;
};

TEST_F(FakeLibcuda, IsTheDriverLoaded) {
  EXPECT_EQ(d_.describeDevice(0), "fake libcuda device, driver " +
                                      std::to_string(CUDA_VERSION / 1000) + "." +
                                      std::to_string(CUDA_VERSION % 1000 / 10));
}

TEST_F(FakeLibcuda, CopiesRoundTripOnceTheStreamIsWaitedFor) {
  const CUdeviceptr buf = allocate(8);
  const std::vector<std::byte> sent(8, std::byte{0x5c});
  std::vector<std::byte> got(8);
  ASSERT_EQ(d_.memcpyHtoDAsync(buf, sent.data(), 8, stream_), CUDA_SUCCESS);
  ASSERT_EQ(d_.memcpyDtoHAsync(got.data(), buf, 8, stream_), CUDA_SUCCESS);
  EXPECT_NE(got, sent) << "work ran before the stream was waited for";
  ASSERT_EQ(d_.streamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(got, sent);
}

TEST_F(FakeLibcuda, APoolDestroyedWithAnAllocationOutstandingKeepsItUntilItsFree) {
  const CUdeviceptr buf = allocate(16);
  ASSERT_EQ(d_.streamSynchronize(stream_), CUDA_SUCCESS);
  ASSERT_EQ(d_.streamDestroy(stream_), CUDA_SUCCESS);
  ASSERT_EQ(d_.memPoolDestroy(pool_), CUDA_SUCCESS);
  CUstream other = nullptr;
  ASSERT_EQ(d_.streamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  const std::vector<std::byte> sent(16, std::byte{7});
  ASSERT_EQ(d_.memcpyHtoDAsync(buf, sent.data(), 16, other), CUDA_SUCCESS);
  ASSERT_EQ(d_.memFreeAsync(buf, other), CUDA_SUCCESS);
  EXPECT_EQ(d_.streamSynchronize(other), CUDA_SUCCESS);
}

using FakeLibcudaDeathTest = FakeLibcuda;

TEST_F(FakeLibcudaDeathTest, AStreamUsedAfterItsDestroyAborts) {
  ASSERT_EQ(d_.streamDestroy(stream_), CUDA_SUCCESS);
  EXPECT_DEATH(d_.streamSynchronize(stream_),
               "cuStreamSynchronize: stream .* after its cuStreamDestroy");
}

TEST_F(FakeLibcudaDeathTest, APoolDestroyedTwiceAborts) {
  ASSERT_EQ(d_.memPoolDestroy(pool_), CUDA_SUCCESS);
  EXPECT_DEATH(d_.memPoolDestroy(pool_), "cuMemPoolDestroy: pool .* destroyed twice");
}

TEST_F(FakeLibcudaDeathTest, AllocatingFromADestroyedPoolAborts) {
  ASSERT_EQ(d_.memPoolDestroy(pool_), CUDA_SUCCESS);
  EXPECT_DEATH(allocate(8), "cuMemAllocFromPoolAsync: pool .* used after its destroy");
}

TEST_F(FakeLibcudaDeathTest, AFreeTwiceAborts) {
  const CUdeviceptr buf = allocate(8);
  ASSERT_EQ(d_.memFreeAsync(buf, stream_), CUDA_SUCCESS);
  EXPECT_DEATH(d_.memFreeAsync(buf, stream_), "cuMemFreeAsync: 0x[0-9a-f]+ freed twice");
  ASSERT_EQ(d_.streamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_DEATH(d_.memFreeAsync(buf, stream_), "is no live allocation");
}

TEST_F(FakeLibcudaDeathTest, ACopyReachingMemoryFreedOnAnotherStreamAborts) {
  const CUdeviceptr buf = allocate(8);
  std::vector<std::byte> got(8);
  ASSERT_EQ(d_.memcpyDtoHAsync(got.data(), buf, 8, stream_), CUDA_SUCCESS);
  CUstream other = nullptr;
  ASSERT_EQ(d_.streamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(d_.memFreeAsync(buf, other), CUDA_SUCCESS);
  ASSERT_EQ(d_.streamSynchronize(other), CUDA_SUCCESS);
  EXPECT_DEATH(d_.streamSynchronize(stream_),
               "cuMemcpyDtoHAsync \\(when it ran\\): source .* no live allocation");
}

TEST_F(FakeLibcudaDeathTest, AnUploadWhoseHostSourceChangedBeforeItRanAborts) {
  const CUdeviceptr buf = allocate(8);
  std::vector<std::byte> source(8, std::byte{1});
  ASSERT_EQ(d_.memcpyHtoDAsync(buf, source.data(), 8, stream_), CUDA_SUCCESS);
  source[3] = std::byte{2};
  EXPECT_DEATH(d_.streamSynchronize(stream_), "host source was changed or freed");
}

TEST_F(FakeLibcudaDeathTest, ALaunchOnAFreedBufferAborts) {
  CUmodule module = nullptr;
  CUfunction kernel = nullptr;
  ASSERT_EQ(d_.moduleLoadData(&module, cuda::kRasterFatbin), CUDA_SUCCESS);
  ASSERT_EQ(d_.moduleGetFunction(&kernel, module, cuda::kRasterKernelName), CUDA_SUCCESS);
  cuda::RasterParams params{};
  params.width = params.height = 4;
  params.framebuffer = allocate(4 * 4 * 4);
  params.triangles = allocate(sizeof(raster::Triangle));
  ASSERT_EQ(d_.memFreeAsync(params.framebuffer, stream_), CUDA_SUCCESS);
  void* args[] = {&params};
  EXPECT_DEATH(d_.launchKernel(kernel, 1, 1, 1, 16, 16, 1, 0, stream_, args, nullptr),
               "cuLaunchKernel: framebuffer .* after its cuMemFreeAsync");
}

}  // namespace
}  // namespace gpufuzz
