// OpenClWaitCheckTest.cpp: every wait is checked against the runtime's own event status. A
// stand-in runtime (the real one with a few entries of its table replaced) returns from waits
// early while the commands before them are held back by a user event, and the seam must report
// it: "clFinish returned while 1 command enqueued before it was CL_QUEUED (...)".
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <vector>

#include "renderer/device/Device.h"
#include "tests/renderer/opencl/OpenClTestDevice.h"

namespace gpufuzz {
namespace {

/// What the stand-in's entries need; function pointers cannot capture.
struct Gate {
  static inline const OpenClApi* real = nullptr;
  static inline cl_event held = nullptr;  // a user event every gated write waits for
  static inline bool early = true;        // false: the stand-in passes every call through
};

cl_int CL_API_CALL gateWrite(cl_command_queue queue, cl_mem mem, cl_bool blocking, size_t offset,
                             size_t size, const void* ptr, cl_uint, const cl_event*,
                             cl_event* event) {
  return Gate::real->enqueueWriteBuffer(queue, mem, blocking, offset, size, ptr,
                                        Gate::early ? 1 : 0, Gate::early ? &Gate::held : nullptr,
                                        event);
}
cl_int CL_API_CALL gateFinish(cl_command_queue queue) {
  return Gate::early ? CL_SUCCESS : Gate::real->finish(queue);
}
cl_int CL_API_CALL gateRead(cl_command_queue queue, cl_mem mem, cl_bool blocking, size_t offset,
                            size_t size, void* ptr, cl_uint count, const cl_event* list,
                            cl_event* event) {
  return Gate::real->enqueueReadBuffer(queue, mem, Gate::early ? CL_FALSE : blocking, offset, size,
                                       ptr, count, list, event);
}

class OpenClWaitCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    Gate::real = &openClApi();
    Gate::early = true;
    OpenClApi standIn = openClApi();
    standIn.enqueueWriteBuffer = gateWrite;
    standIn.finish = gateFinish;
    standIn.enqueueReadBuffer = gateRead;
    auto backend = testing::makeOpenClTestBackend(standIn);
    ASSERT_NE(backend, nullptr);
    cl_ = backend.get();
    device_ = std::make_unique<Device>(std::move(backend));
    ctx_ = device_->createContext();
    buf_ = device_->allocBuffer(ctx_, 256);
    cl_int status = CL_SUCCESS;
    Gate::held = Gate::real->createUserEvent(cl_->contextHandle(ctx_), &status);
    ASSERT_EQ(status, CL_SUCCESS);
    device_->copyToDevice(ctx_, buf_, bytes_);
  }
  void TearDown() override {
    if (Gate::held == nullptr) return;
    openGate();
    Gate::real->releaseEvent(Gate::held);
    Gate::held = nullptr;
  }
  /// Lets the held commands run, really waits for them, and makes the stand-in's waits real.
  void openGate() {
    Gate::early = false;
    Gate::real->setUserEventStatus(Gate::held, CL_COMPLETE);
    if (const cl_command_queue queue = cl_->queueHandle(ctx_); queue != nullptr) {
      Gate::real->finish(queue);
    }
  }
  static std::string errorAt(CallPoint point, const std::function<void()>& call) {
    try {
      call();
    } catch (const DeviceError& e) {
      EXPECT_EQ(e.point(), point);
      return e.what();
    }
    return "no DeviceError";
  }

  std::vector<std::byte> bytes_ = std::vector<std::byte>(256, std::byte{0x5a});
  OpenClBackend* cl_ = nullptr;
  std::unique_ptr<Device> device_;
  ContextId ctx_ = 0;
  BufferId buf_ = 0;
};

/// "<wait> returned while 1 command enqueued before it was <a state short of CL_COMPLETE>
/// (clEnqueueWriteBuffer)"
void expectHeldWrite(const std::string& error, const std::string& wait) {
  const std::string prefix = wait + " returned while 1 command enqueued before it was CL_";
  EXPECT_EQ(error.rfind(prefix, 0), 0U) << error;
  EXPECT_NE(error.find("(clEnqueueWriteBuffer)"), std::string::npos) << error;
  EXPECT_EQ(error.find("CL_COMPLETE"), std::string::npos) << error;
}

TEST_F(OpenClWaitCheck, AFinishThatReturnsEarlyIsAnError) {
  const std::string error = errorAt(CallPoint::Sync, [&] { device_->synchronize(ctx_); });
  expectHeldWrite(error, "clFinish");
  std::cout << "[ reported ] " << error << "\n";
  // Once the work has really completed, the same wait passes: the check reads the runtime's
  // state, it does not fail every wait.
  openGate();
  EXPECT_NO_THROW(device_->synchronize(ctx_));
}

TEST_F(OpenClWaitCheck, ABlockingReadThatReturnsEarlyIsAnError) {
  std::vector<std::byte> out(256);
  const std::string error =
      errorAt(CallPoint::CopyToHost, [&] { device_->copyToHost(ctx_, buf_, out); });
  EXPECT_EQ(error.rfind("clEnqueueReadBuffer (blocking) returned while 2 commands enqueued before "
                        "it were not complete: clEnqueueWriteBuffer CL_",
                        0),
            0U)
      << error;
  EXPECT_NE(error.find("clEnqueueReadBuffer CL_"), std::string::npos) << error;
  openGate();
  EXPECT_NO_THROW(device_->copyToHost(ctx_, buf_, out));
  EXPECT_EQ(out, bytes_);
}

TEST_F(OpenClWaitCheck, TheWaitInAReleaseIsChecked) {
  const cl_command_queue queue = cl_->queueHandle(ctx_);
  Gate::real->retainCommandQueue(queue);  // to drain it here once the gate opens
  const std::string error = errorAt(CallPoint::CtxDestroy, [&] { device_->destroyContext(ctx_); });
  expectHeldWrite(error, "clFinish");
  Gate::early = false;
  Gate::real->setUserEventStatus(Gate::held, CL_COMPLETE);
  Gate::real->finish(queue);
  Gate::real->releaseCommandQueue(queue);
  device_->freeBuffer(buf_);
  EXPECT_EQ(device_->memoryInUse(), MemoryInUse{});
}

}  // namespace
}  // namespace gpufuzz
