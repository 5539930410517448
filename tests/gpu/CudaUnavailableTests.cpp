// CudaUnavailableTests.cpp: asking for the cuda backend on a machine without the driver is a
// clear DeviceUnavailable, not a loader failure or a crash; with the driver, the backend works.
// Runs everywhere and skips nothing: that this executable starts at all on a machine without the
// driver is part of what it checks.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <string>
#include <vector>

#include "renderer/cuda/CudaAsyncBackend.h"
#include "renderer/cuda/CudaBackend.h"
#include "renderer/device/DeviceError.h"

namespace gpufuzz {
namespace {

/// Why libcuda.so.1 cannot be loaded here, or empty when it can.
std::string driverLoadFailure() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return dlerror();
  dlclose(library);
  return {};
}

using MakeBackend = std::unique_ptr<Backend> (*)(int ordinal);

std::string unavailableMessage(int ordinal, MakeBackend make = makeCudaBackend) {
  try {
    make(ordinal);
  } catch (const DeviceUnavailable& e) {
    return e.what();
  }
  ADD_FAILURE() << "making a CUDA backend on device " << ordinal
                << " did not throw DeviceUnavailable";
  return {};
}

/// 16 bytes of `fill` to the device and back through one buffer, which is freed before its
/// context's destroy or, with `freeAfterDestroy`, after it; nothing is left held.
void expectRoundTrip(Backend& backend, std::byte fill, bool freeAfterDestroy) {
  const ContextId ctx = backend.createContext();
  const BufferId buf = backend.allocBuffer(ctx, 16);
  const std::vector<std::byte> sent(16, fill);
  std::vector<std::byte> received(16);
  backend.copyToDevice(ctx, buf, sent);
  backend.copyToHost(ctx, buf, received);
  EXPECT_EQ(received, sent);
  if (!freeAfterDestroy) backend.freeBuffer(buf);
  backend.destroyContext(ctx);
  if (freeAfterDestroy) backend.freeBuffer(buf);
  EXPECT_EQ(backend.memoryInUse(), (MemoryInUse{0, 0, 0}));
}

TEST(CudaUnavailable, MakeCudaBackendIsUnavailableWithoutTheDriverAndWorksWithIt) {
  const std::string loadFailure = driverLoadFailure();
  if (!loadFailure.empty()) {
    const std::string message = unavailableMessage(0);
    EXPECT_EQ(message.rfind("no CUDA driver: libcuda.so.1 not found (", 0), 0U) << message;
    EXPECT_NE(message.find(loadFailure), std::string::npos) << message;
    // The driver is looked for once per process; every later request gets the same answer.
    EXPECT_EQ(unavailableMessage(0), message);
    EXPECT_EQ(unavailableMessage(1), message);
    return;
  }

  const std::unique_ptr<Backend> backend = makeCudaBackend();
  EXPECT_EQ(backend->name(), "cuda");
  expectRoundTrip(*backend, std::byte{0x3c}, false);
  EXPECT_EQ(unavailableMessage(-1).rfind("no CUDA device -1", 0), 0U);
}

TEST(CudaUnavailable, MakeCudaAsyncBackendIsUnavailableWithoutTheDriverAndWorksWithIt) {
  if (!driverLoadFailure().empty()) {
    // The same once-per-process answer as the cuda backend's.
    const std::string message = unavailableMessage(0, makeCudaAsyncBackend);
    EXPECT_EQ(message.rfind("no CUDA driver: libcuda.so.1 not found (", 0), 0U) << message;
    EXPECT_EQ(message, unavailableMessage(0));
    return;
  }
  const std::unique_ptr<Backend> backend = makeCudaAsyncBackend();
  EXPECT_EQ(backend->name(), "cuda-async");
  expectRoundTrip(*backend, std::byte{0x5a}, true);  // the free is valid after the destroy here
  EXPECT_EQ(unavailableMessage(-1, makeCudaAsyncBackend).rfind("no CUDA device -1", 0), 0U);
}

}  // namespace
}  // namespace gpufuzz
