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

TEST_F(FakeLibcuda, AnEventRecordedOnAStreamOfAnotherContextIsAnInvalidHandle) {
  CUcontext other = nullptr;
  ASSERT_EQ(d_.ctxCreate(&other, 0, 0), CUDA_SUCCESS);
  CUevent event = nullptr;
  ASSERT_EQ(d_.eventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  EXPECT_EQ(d_.eventRecord(event, stream_), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(d_.ctxDestroy(other), CUDA_SUCCESS);
}

TEST_F(FakeLibcuda, AStreamWaitingForAnEventRunsTheWorkBeforeTheRecordFirst) {
  CUstream other = nullptr;
  ASSERT_EQ(d_.streamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent event = nullptr;
  ASSERT_EQ(d_.eventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  const CUdeviceptr buf = allocate(8);
  ASSERT_EQ(d_.memsetD8Async(buf, 0x3c, 8, stream_), CUDA_SUCCESS);
  ASSERT_EQ(d_.eventRecord(event, stream_), CUDA_SUCCESS);
  ASSERT_EQ(d_.streamWaitEvent(other, event, 0), CUDA_SUCCESS);
  std::vector<std::byte> got(8);
  ASSERT_EQ(d_.memcpyDtoHAsync(got.data(), buf, 8, other), CUDA_SUCCESS);
  ASSERT_EQ(d_.streamSynchronize(other), CUDA_SUCCESS);
  EXPECT_EQ(got, std::vector<std::byte>(8, std::byte{0x3c}));
  EXPECT_EQ(d_.eventQuery(event), CUDA_SUCCESS);
}

TEST_F(FakeLibcuda, AGraphWithAllocationNodesHasOneExecutableGraphAtATime) {
  void* slot = nullptr;
  ASSERT_EQ(d_.memHostAlloc(&slot, 16, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
  ASSERT_EQ(d_.streamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  CUdeviceptr buf = 0;
  ASSERT_EQ(d_.memAllocAsync(&buf, 16, stream_), CUDA_SUCCESS);
  ASSERT_EQ(d_.memsetD8Async(buf, 9, 16, stream_), CUDA_SUCCESS);
  ASSERT_EQ(d_.memcpyDtoHAsync(slot, buf, 16, stream_), CUDA_SUCCESS);
  ASSERT_EQ(d_.memFreeAsync(buf, stream_), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(d_.streamEndCapture(stream_, &graph), CUDA_SUCCESS);
  CUgraphExec first = nullptr;
  CUgraphExec second = nullptr;
  ASSERT_EQ(d_.graphInstantiate(&first, graph, 0), CUDA_SUCCESS);
  EXPECT_NE(d_.graphInstantiate(&second, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(d_.graphLaunch(first, stream_), CUDA_SUCCESS);
  ASSERT_EQ(d_.streamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(slot, std::vector<std::byte>(16, std::byte{9}).data(), 16), 0);
  ASSERT_EQ(d_.graphExecDestroy(first), CUDA_SUCCESS);
  EXPECT_EQ(d_.graphInstantiate(&second, graph, 0), CUDA_SUCCESS);
}

using FakeLibcudaDeathTest = FakeLibcuda;

TEST_F(FakeLibcudaDeathTest, AnEventUsedAfterItsDestroyAborts) {
  CUevent event = nullptr;
  ASSERT_EQ(d_.eventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(d_.eventDestroy(event), CUDA_SUCCESS);
  EXPECT_DEATH(d_.eventQuery(event), "cuEventQuery: event .* used after its destroy");
}

TEST_F(FakeLibcudaDeathTest, PinnedMemoryFreedBeforeItsCopyRanAborts) {
  void* host = nullptr;
  ASSERT_EQ(d_.memHostAlloc(&host, 64, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
  ASSERT_EQ(d_.memcpyDtoHAsync(host, allocate(64), 64, stream_), CUDA_SUCCESS);
  ASSERT_EQ(d_.memFreeHost(host), CUDA_SUCCESS);
  EXPECT_DEATH(d_.streamSynchronize(stream_), "pinned host memory was freed before the copy ran");
}

TEST_F(FakeLibcudaDeathTest, AMemsetReachingAnUnmappedRangeAborts) {
  size_t granularity = 0;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  ASSERT_EQ(d_.memGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_SUCCESS);
  CUdeviceptr range = 0;
  CUmemGenericAllocationHandle block = 0;
  ASSERT_EQ(d_.memAddressReserve(&range, granularity, 0, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(d_.memCreate(&block, granularity, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(d_.memMap(range, granularity, 0, block, 0), CUDA_SUCCESS);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ASSERT_EQ(d_.memSetAccess(range, granularity, &access, 1), CUDA_SUCCESS);
  ASSERT_EQ(d_.memsetD8Async(range, 1, 64, stream_), CUDA_SUCCESS);
  ASSERT_EQ(d_.memUnmap(range, granularity), CUDA_SUCCESS);
  EXPECT_DEATH(d_.streamSynchronize(stream_), "cuMemsetD8Async \\(when it ran\\): .* not mapped");
}

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
