// CudaBackendTests.cpp: what only the cuda backend does on a real device: cuCtxDestroy frees a
// context's buffers with it, so a later free of one is an error (never a free of whatever now
// lies at its address) and the context's memory is back at once. What both CUDA backends do
// alike runs here too, on cuda (CudaStreamBackendTests.cpp). Without a usable CUDA device every
// test fails: a GPU run that skipped would look like a pass.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "renderer/Raster.h"
#include "renderer/cuda/CudaBackend.h"
#include "renderer/device/DeviceError.h"
#include "tests/gpu/CudaBackendKinds.h"
#include "tests/gpu/DriverMemory.h"
#include "tests/gpu/GpuScenes.h"

namespace gpufuzz {
namespace {

using namespace gpuscenes;

INSTANTIATE_TEST_SUITE_P(, CudaStreamBackendTest, ::testing::Values(kCuda), kindLabel);

class CudaBackendTest : public CudaStreamBackendTest {};
INSTANTIATE_TEST_SUITE_P(, CudaBackendTest, ::testing::Values(kCuda), kindLabel);

/// Buffers in a fresh context, filled with a pattern, that must come through an orphan's free
/// untouched.
struct Bystanders {
  Backend& backend;
  ContextId ctx;
  std::vector<BufferId> ids;
  std::vector<std::vector<uint32_t>> contents;

  Bystanders(Backend& b, ContextId c, const std::vector<uint64_t>& sizes) : backend(b), ctx(c) {
    for (uint64_t bytes : sizes) {
      ids.push_back(backend.allocBuffer(ctx, bytes));
      std::vector<uint32_t> words(bytes / sizeof(uint32_t));
      for (size_t i = 0; i < words.size(); ++i) {
        words[i] = raster::hash3(static_cast<uint32_t>(ids.back()), static_cast<uint32_t>(i), 5);
      }
      backend.copyToDevice(ctx, ids.back(), bytesOf(words));
      contents.push_back(std::move(words));
    }
    backend.synchronize(ctx);
  }
  void expectIntactAndFree() {
    for (size_t k = 0; k < ids.size(); ++k) {
      std::vector<uint32_t> back(contents[k].size());
      backend.copyToHost(ctx, ids[k], writableBytesOf(back));
      EXPECT_EQ(back, contents[k]) << "buffer " << ids[k] << " was damaged";
      backend.freeBuffer(ids[k]);
    }
  }
};

const std::vector<uint64_t> kOrphanSizes = {1, 256, 4096, 1 << 20, 64 << 20};

/// Buffers of kOrphanSizes, allocated in a context that is then destroyed.
std::vector<BufferId> makeOrphans(Backend& backend) {
  const ContextId first = backend.createContext();
  std::vector<BufferId> orphans;
  for (uint64_t bytes : kOrphanSizes)
    orphans.push_back(backend.allocBuffer(first, bytes));
  backend.destroyContext(first);
  return orphans;
}

/// Frees each orphan, expecting DeviceError naming cuMemFree; prints what the driver said.
void freeOrphans(Backend& backend, const std::vector<BufferId>& orphans) {
  for (BufferId buf : orphans) {
    const std::string message =
        expectDeviceError([&] { backend.freeBuffer(buf); }, CallPoint::BufFree, "cuMemFree");
    std::cout << "[ driver   ] free after context destroy: " << message << "\n";
  }
}

TEST_P(CudaBackendTest, FreeAfterContextDestroyIsAnErrorAndTheNextContextWorks) {
  const std::vector<BufferId> orphans = makeOrphans(*backend_);

  // The next context allocates normally, likely at the addresses just released.
  const ContextId next = backend_->createContext();
  Bystanders bystanders(*backend_, next, kOrphanSizes);
  freeOrphans(*backend_, orphans);
  EXPECT_EQ(backend_->memoryInUse().buffers, kOrphanSizes.size());
  bystanders.expectIntactAndFree();
  const Scene s{40, 40, 2, 8, 1, 2, {{32, 7, 0}}};
  expectSameImage(renderThrough(*backend_, next, s), renderOnCpu(s), s);
  backend_->destroyContext(next);
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 0}));
}

TEST_P(CudaBackendTest, FreeAfterContextDestroyIsAnErrorAcrossBackends) {
  const std::vector<BufferId> orphans = makeOrphans(*backend_);

  const std::unique_ptr<Backend> other = makeCudaBackend();
  Bystanders bystanders(*other, other->createContext(), kOrphanSizes);
  freeOrphans(*backend_, orphans);
  bystanders.expectIntactAndFree();
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 0}));
  EXPECT_EQ(other->memoryInUse(), (MemoryInUse{0, 0, 1}));
}

TEST_P(CudaBackendTest, FreeAfterContextDestroyCallsTheDriverWhenNothingReusedTheAddress) {
  const ContextId first = backend_->createContext();
  const BufferId lone = backend_->allocBuffer(first, 4096);
  const BufferId beside = backend_->allocBuffer(first, 4096);
  backend_->destroyContext(first);
  // No context current at all.
  std::cout << "[ driver   ] no context alive: "
            << expectDeviceError([&] { backend_->freeBuffer(lone); }, CallPoint::BufFree,
                                 "cuMemFree: CUDA_ERROR_")
            << "\n";
  // Another context current, holding no allocation.
  const ContextId next = backend_->createContext();
  backend_->synchronize(next);
  std::cout << "[ driver   ] another context current: "
            << expectDeviceError([&] { backend_->freeBuffer(beside); }, CallPoint::BufFree,
                                 "cuMemFree: CUDA_ERROR_")
            << "\n";
  backend_->destroyContext(next);
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 0}));
}

TEST_P(CudaBackendTest, DestroyingAContextReturnsItsBuffersMemory) {
  const testing::DriverMemory memory;
  constexpr int64_t kBytes = int64_t{1} << 30;
  const ContextId ctx = backend_->createContext();
  const BufferId buf = backend_->allocBuffer(ctx, kBytes);
  const int64_t held = memory.freeBytes();
  backend_->destroyContext(ctx);
  const int64_t released = memory.freeBytes();
  std::cout << "[ driver   ] free memory rose by " << (released - held) / (1 << 20)
            << " MiB when a context holding 1024 MiB was destroyed\n";
  EXPECT_GE(released - held, kBytes);
  EXPECT_THROW(backend_->freeBuffer(buf), DeviceError);
}

}  // namespace
}  // namespace gpufuzz
