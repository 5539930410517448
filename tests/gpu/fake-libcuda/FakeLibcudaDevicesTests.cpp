// FakeLibcudaDevicesTests.cpp: the stand-in libcuda.so.1 with several devices. main() sets
// FAKE_LIBCUDA_DEVICES=3 and CUDA_VISIBLE_DEVICES=2,0,9,1 before the driver loads: the list ends at
// 9, so physical devices 2 and 0 are visible, as devices 0 and 1. Cross-device uses the
// documentation gives an error code get it; the undefined ones abort.
#include <gtest/gtest.h>

#include <cuda.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "renderer/cuda/CudaDriver.h"

namespace gpufuzz {
namespace {

class FakeDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int device = 0; device < 2; ++device) {
      ASSERT_EQ(d_.primaryCtxRetain(&primary_[device], device), CUDA_SUCCESS);
      ASSERT_EQ(d_.ctxSetCurrent(primary_[device]), CUDA_SUCCESS);
      ASSERT_EQ(d_.streamCreate(&stream_[device], CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
      CUmemPoolProps props{};
      props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
      props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      props.location.id = device;
      ASSERT_EQ(d_.memPoolCreate(&pool_[device], &props), CUDA_SUCCESS);
    }
  }

  /// `bytes` of device `device`'s pool, allocated on that device's stream.
  CUdeviceptr allocate(int device, size_t bytes) {
    CUdeviceptr address = 0;
    EXPECT_EQ(d_.memAllocFromPoolAsync(&address, bytes, pool_[device], stream_[device]),
              CUDA_SUCCESS);
    return address;
  }

  void current(int device) { ASSERT_EQ(d_.ctxSetCurrent(primary_[device]), CUDA_SUCCESS); }

  const CudaDriver& d_ = cudaDriver();
  CUcontext primary_[2] = {};
  CUstream stream_[2] = {};
  CUmemoryPool pool_[2] = {};
};

TEST_F(FakeDevices, CudaVisibleDevicesLeavesTheListedDevicesRenumbered) {
  EXPECT_EQ(d_.deviceCount, 2);
  EXPECT_EQ(d_.describeDevice(0).substr(0, 21), "fake libcuda device 2");
  EXPECT_EQ(d_.describeDevice(1).substr(0, 21), "fake libcuda device, ");
  CUdevice device = -1;
  EXPECT_EQ(d_.deviceGet(&device, 2), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_NE(primary_[0], primary_[1]);
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(library, nullptr);
  using GetUuid = CUresult (*)(CUuuid*, CUdevice);
  const auto getUuid = reinterpret_cast<GetUuid>(dlsym(library, "cuDeviceGetUuid_v2"));
  ASSERT_NE(getUuid, nullptr);
  CUuuid first{};
  CUuuid second{};
  ASSERT_EQ(getUuid(&first, 0), CUDA_SUCCESS);
  ASSERT_EQ(getUuid(&second, 1), CUDA_SUCCESS);
  EXPECT_EQ(first.bytes[15], 2);  // physical device 2
  EXPECT_EQ(second.bytes[15], 0);
}

TEST_F(FakeDevices, PeerAccessIsEnabledOnceAndDisabledOnce) {
  int can = -1;
  ASSERT_EQ(d_.deviceCanAccessPeer(&can, 0, 1), CUDA_SUCCESS);
  EXPECT_EQ(can, 1);
  ASSERT_EQ(d_.deviceCanAccessPeer(&can, 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(can, 0);
  current(0);
  EXPECT_EQ(d_.ctxDisablePeerAccess(primary_[1]), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  EXPECT_EQ(d_.ctxEnablePeerAccess(primary_[1], 0), CUDA_SUCCESS);
  EXPECT_EQ(d_.ctxEnablePeerAccess(primary_[1], 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
  EXPECT_EQ(d_.ctxEnablePeerAccess(primary_[0], 0), CUDA_ERROR_INVALID_CONTEXT);
  CUcontext same = nullptr;
  ASSERT_EQ(d_.ctxCreate(&same, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(d_.ctxEnablePeerAccess(primary_[0], 0), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
  ASSERT_EQ(d_.ctxDestroy(same), CUDA_SUCCESS);
  current(0);
  EXPECT_EQ(d_.ctxDisablePeerAccess(primary_[1]), CUDA_SUCCESS);
  EXPECT_EQ(d_.ctxDisablePeerAccess(primary_[1]), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
}

TEST_F(FakeDevices, PeerAccessEndsWithThePeersContext) {
  CUcontext peer = nullptr;
  ASSERT_EQ(d_.ctxCreate(&peer, 0, 1), CUDA_SUCCESS);
  current(0);
  ASSERT_EQ(d_.ctxEnablePeerAccess(peer, 0), CUDA_SUCCESS);
  ASSERT_EQ(d_.ctxDestroy(peer), CUDA_SUCCESS);
  current(0);
  EXPECT_DEATH(d_.ctxDisablePeerAccess(peer),
               "cuCtxDisablePeerAccess: context .* after its destroy");
}

TEST_F(FakeDevices, APoolGivesAnotherDeviceAccessOnlyThroughItsAccess) {
  const CUdeviceptr buf = allocate(0, 64);
  ASSERT_EQ(d_.streamSynchronize(stream_[0]), CUDA_SUCCESS);
  // Peer access between the contexts does not reach pool memory.
  current(1);
  ASSERT_EQ(d_.ctxEnablePeerAccess(primary_[0], 0), CUDA_SUCCESS);
  EXPECT_DEATH(d_.memsetD8Async(buf, 1, 64, stream_[1]),
               "cuMemsetD8Async: destination .* is memory of device 0, which device 1 was given "
               "no access to");
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 1;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ASSERT_EQ(d_.memPoolSetAccess(pool_[0], &access, 1), CUDA_SUCCESS);
  ASSERT_EQ(d_.memsetD8Async(buf, 0x21, 64, stream_[1]), CUDA_SUCCESS);
  std::vector<std::byte> got(64);
  ASSERT_EQ(d_.memcpyDtoHAsync(got.data(), buf, 64, stream_[1]), CUDA_SUCCESS);
  ASSERT_EQ(d_.streamSynchronize(stream_[1]), CUDA_SUCCESS);
  EXPECT_EQ(got, std::vector<std::byte>(64, std::byte{0x21}));
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  EXPECT_EQ(d_.memPoolSetAccess(pool_[0], &access, 1), CUDA_ERROR_INVALID_VALUE);
  access.location.id = 2;
  EXPECT_EQ(d_.memPoolSetAccess(pool_[0], &access, 1), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(FakeDevices, PeerCopiesNeedNoAccessButTheirContextsMemory) {
  const CUdeviceptr src = allocate(0, 32);
  const CUdeviceptr dst = allocate(1, 32);
  ASSERT_EQ(d_.memsetD8Async(src, 0x5a, 32, stream_[0]), CUDA_SUCCESS);
  ASSERT_EQ(d_.streamSynchronize(stream_[0]), CUDA_SUCCESS);
  ASSERT_EQ(d_.memcpyPeerAsync(dst, primary_[1], src, primary_[0], 32, stream_[1]), CUDA_SUCCESS);
  std::vector<std::byte> got(32);
  ASSERT_EQ(d_.memcpyDtoHAsync(got.data(), dst, 32, stream_[1]), CUDA_SUCCESS);
  ASSERT_EQ(d_.streamSynchronize(stream_[1]), CUDA_SUCCESS);
  EXPECT_EQ(got, std::vector<std::byte>(32, std::byte{0x5a}));
  EXPECT_DEATH(d_.memcpyPeerAsync(dst, primary_[0], src, primary_[0], 32, stream_[1]),
               "cuMemcpyPeerAsync: destination .* is memory of device 1, not of its context's");
  EXPECT_DEATH(d_.memcpyDtoHAsync(got.data(), dst, 32, stream_[0]),
               "cuMemcpyDtoHAsync: source .* is memory of device 1");
}

TEST_F(FakeDevices, AStreamWaitsForAnEventOfAnotherDevice) {
  const CUdeviceptr buf = allocate(0, 16);
  current(0);
  CUevent event = nullptr;
  ASSERT_EQ(d_.eventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(d_.memsetD8Async(buf, 0x33, 16, stream_[0]), CUDA_SUCCESS);
  ASSERT_EQ(d_.eventRecord(event, stream_[0]), CUDA_SUCCESS);
  EXPECT_EQ(d_.eventRecord(event, stream_[1]), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(d_.streamWaitEvent(stream_[1], event, 0), CUDA_SUCCESS);
  const CUdeviceptr copy = allocate(1, 16);
  current(1);
  ASSERT_EQ(d_.memcpyPeerAsync(copy, primary_[1], buf, primary_[0], 16, stream_[1]), CUDA_SUCCESS);
  std::vector<std::byte> got(16);
  ASSERT_EQ(d_.memcpyDtoHAsync(got.data(), copy, 16, stream_[1]), CUDA_SUCCESS);
  ASSERT_EQ(d_.streamSynchronize(stream_[1]), CUDA_SUCCESS);
  EXPECT_EQ(got, std::vector<std::byte>(16, std::byte{0x33}));
  EXPECT_EQ(d_.eventQuery(event), CUDA_SUCCESS);
}

}  // namespace
}  // namespace gpufuzz

int main(int argc, char** argv) {
  setenv("FAKE_LIBCUDA_DEVICES", "3", 1);
  setenv("CUDA_VISIBLE_DEVICES", "2,0,9,1", 1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
