// CudaAsyncBackendTests.cpp: what only the cuda-async backend does on a real device: a buffer
// outlives its context's destroy, keeps its contents until freed, and its later free is valid and
// releases the pool; it works beside a cuda backend in one process. What both CUDA backends do
// alike runs here too, on cuda-async (CudaStreamBackendTests.cpp). Without a usable CUDA device
// every test fails: a GPU run that skipped would look like a pass.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "renderer/Raster.h"
#include "renderer/cuda/CudaBackend.h"
#include "tests/gpu/CudaBackendKinds.h"
#include "tests/gpu/DriverMemory.h"
#include "tests/gpu/GpuScenes.h"

namespace gpufuzz {
namespace {

using namespace gpuscenes;

INSTANTIATE_TEST_SUITE_P(, CudaStreamBackendTest, ::testing::Values(kCudaAsync), kindLabel);

class CudaAsyncBackendTest : public CudaStreamBackendTest {};
INSTANTIATE_TEST_SUITE_P(, CudaAsyncBackendTest, ::testing::Values(kCudaAsync), kindLabel);

TEST_P(CudaAsyncBackendTest, ABufferKeepsItsContentsPastItsContextsDestroyUntilFreed) {
  const ContextId first = backend_->createContext();
  const Scene s{48, 40, 3, 8, 2, 9, {{32, 7, 0}, {3, 8, 0}}};
  auto buffers = std::make_unique<SceneBuffers>(*backend_, first, s);
  enqueueScene(*backend_, first, *buffers, s);
  const std::vector<uint32_t> before = readImage(*backend_, first, *buffers, s);
  expectSameImage(before, renderOnCpu(s), s);
  backend_->destroyContext(first);
  // A new context's pool must not hand out the outstanding allocations again.
  const ContextId next = backend_->createContext();
  const Scene t{48, 40, 1, 4, 5, 10, {{16, 11, 0}}};
  expectSameImage(renderThrough(*backend_, next, t), renderOnCpu(t), t);
  buffers.reset();  // the frees of the first context's buffers, all valid
  EXPECT_EQ(backend_->memoryInUse(), (MemoryInUse{0, 0, 1}));
  backend_->destroyContext(next);
}

TEST_P(CudaAsyncBackendTest, ThePoolIsReleasedWhenItsLastAllocationIsFreed) {
  const testing::DriverMemory memory;
  constexpr int64_t kBytes = int64_t{1} << 30;
  const int64_t idle = memory.freeBytes();
  const ContextId ctx = backend_->createContext();
  const BufferId buf = backend_->allocBuffer(ctx, kBytes);
  backend_->synchronize(ctx);
  backend_->destroyContext(ctx);
  const int64_t held = memory.freeBytes();
  backend_->freeBuffer(buf);
  const int64_t released = memory.freeBytes();
  std::cout << "[ driver   ] after the destroy of a context holding 1024 MiB, "
            << (idle - held) / (1 << 20) << " MiB stayed held; its free released "
            << (released - held) / (1 << 20) << " MiB\n";
  EXPECT_GE(idle - held, kBytes) << "the destroy released memory still allocated";
  EXPECT_GE(released - held, kBytes) << "the last free did not release the pool";
}

TEST_P(CudaAsyncBackendTest, WorksBesideACudaBackendInOneProcess) {
  // The cuda backend makes its own contexts current; this one must make the primary one current
  // again on every call.
  const std::unique_ptr<Backend> cuda = makeCudaBackend();
  const ContextId mine = backend_->createContext();
  const ContextId theirs = cuda->createContext();
  const Scene s{32, 32, 2, 4, 1, 3, {{12, 4, 0}}};
  expectSameImage(renderThrough(*backend_, mine, s), renderOnCpu(s), s);
  expectSameImage(renderThrough(*cuda, theirs, s), renderOnCpu(s), s);
  cuda->destroyContext(theirs);
  expectSameImage(renderThrough(*backend_, mine, s), renderOnCpu(s), s);
  backend_->destroyContext(mine);
}

}  // namespace
}  // namespace gpufuzz
