// OpenClModelExecutorTest.cpp: the `opencl` model's executor on a real runtime (pocl unless
// GPUFUZZ_OPENCL_DEVICE says otherwise), and its checks against stand-in runtimes: the real table
// with a few entries replaced by ones that return from waits early, drop callbacks, run
// destructor callbacks in the wrong order, corrupt a write, or accept a foreign context.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "renderer/device/DeviceError.h"
#include "renderer/opencl/OpenClModelExecutor.h"
#include "tests/renderer/opencl/OpenClTestDevice.h"

namespace gpufuzz {
namespace {

constexpr int kGraceMs = 100;

/// What the stand-in entries need; function pointers cannot capture.
struct Stand {
  static inline const OpenClApi* real = nullptr;
  static inline cl_event held = nullptr;  // a user event every gated write waits for
  static inline std::map<cl_mem, std::vector<std::pair<void(CL_CALLBACK*)(cl_mem, void*), void*>>>
      destructors;
};

cl_int CL_API_CALL gatedWrite(cl_command_queue queue, cl_mem mem, cl_bool blocking, size_t offset,
                              size_t size, const void* ptr, cl_uint count, const cl_event* list,
                              cl_event* event) {
  if (Stand::held == nullptr) {
    cl_context ctx = nullptr;
    Stand::real->getMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof ctx, &ctx, nullptr);
    Stand::held = Stand::real->createUserEvent(ctx, nullptr);
  }
  std::vector<cl_event> waits(list, list + count);
  waits.push_back(Stand::held);
  return Stand::real->enqueueWriteBuffer(queue, mem, blocking, offset, size, ptr,
                                         static_cast<cl_uint>(waits.size()), waits.data(), event);
}
cl_int CL_API_CALL earlyFinish(cl_command_queue) {
  return CL_SUCCESS;
}
cl_int CL_API_CALL earlyRead(cl_command_queue queue, cl_mem mem, cl_bool, size_t offset,
                             size_t size, void* ptr, cl_uint count, const cl_event* list,
                             cl_event* event) {
  return Stand::real->enqueueReadBuffer(queue, mem, CL_FALSE, offset, size, ptr, count, list,
                                        event);
}
cl_int CL_API_CALL earlyWait(cl_uint, const cl_event*) {
  return CL_SUCCESS;
}
cl_int CL_API_CALL droppedCallback(cl_event, cl_int, void(CL_CALLBACK*)(cl_event, cl_int, void*),
                                   void*) {
  return CL_SUCCESS;
}
cl_int CL_API_CALL droppedDestructor(cl_mem, void(CL_CALLBACK*)(cl_mem, void*), void*) {
  return CL_SUCCESS;
}
void CL_CALLBACK inRegistrationOrder(cl_mem mem, void*) {
  for (const auto& [fn, data] : Stand::destructors[mem])
    fn(mem, data);
}
cl_int CL_API_CALL fifoDestructor(cl_mem mem, void(CL_CALLBACK* fn)(cl_mem, void*), void* data) {
  std::vector<std::pair<void(CL_CALLBACK*)(cl_mem, void*), void*>>& list = Stand::destructors[mem];
  list.emplace_back(fn, data);
  if (list.size() > 1) return CL_SUCCESS;
  return Stand::real->setMemObjectDestructorCallback(mem, inRegistrationOrder, nullptr);
}
cl_int CL_API_CALL corruptWrite(cl_command_queue queue, cl_mem mem, cl_bool, size_t offset,
                                size_t size, const void* ptr, cl_uint count, const cl_event* list,
                                cl_event* event) {
  std::vector<unsigned char> bytes(size);
  std::memcpy(bytes.data(), ptr, size);
  bytes[0] ^= 0x5a;
  return Stand::real->enqueueWriteBuffer(queue, mem, CL_TRUE, offset, size, bytes.data(), count,
                                         list, event);
}
cl_int CL_API_CALL acceptingWrite(cl_command_queue queue, cl_mem mem, cl_bool blocking,
                                  size_t offset, size_t size, const void* ptr, cl_uint count,
                                  const cl_event* list, cl_event* event) {
  const cl_int status =
      Stand::real->enqueueWriteBuffer(queue, mem, blocking, offset, size, ptr, count, list, event);
  return status == CL_INVALID_CONTEXT ? CL_SUCCESS : status;
}

/// A fill whose bytes past 64 MiB land 64 MiB lower, as NVIDIA's small patterns land 16 GiB
/// lower past 16 GiB (corpus/runtimes/reports/nvidia-opencl-fill-beyond-16gib.md).
constexpr size_t kWrapAt = size_t{64} << 20;
cl_int CL_API_CALL wrappingFill(cl_command_queue queue, cl_mem mem, const void* pattern,
                                size_t patternSize, size_t offset, size_t size, cl_uint count,
                                const cl_event* list, cl_event* event) {
  if (offset + size <= kWrapAt) {
    return Stand::real->enqueueFillBuffer(queue, mem, pattern, patternSize, offset, size, count,
                                          list, event);
  }
  const cl_int below = Stand::real->enqueueFillBuffer(queue, mem, pattern, patternSize, offset,
                                                      kWrapAt - offset, count, list, nullptr);
  if (below != CL_SUCCESS) return below;
  return Stand::real->enqueueFillBuffer(queue, mem, pattern, patternSize, 0,
                                        offset + size - kWrapAt, 0, nullptr, event);
}

class OpenClModelExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Stand::real = &openClApi();
    Stand::held = nullptr;
    Stand::destructors.clear();
  }
  void TearDown() override {
    executor_.reset();
    if (Stand::held != nullptr) Stand::real->setUserEventStatus(Stand::held, CL_COMPLETE);
  }
  /// The executor through `api` (the real table when not given).
  ModelExecutor& make(const OpenClApi& api) {
    executor_ = makeOpenClModelExecutor(api, testing::openClTestDevice(), kGraceMs);
    return *executor_;
  }
  OpenClApi standIn() const { return openClApi(); }

  /// Runs `op` with `names` and `args` as operation `ordinal`.
  void run(std::string_view op, std::vector<std::string> names,
           std::vector<ModelCall::Arg> args = {}) {
    ++ordinal_;
    executor_->run(ModelCall{op, names, args, ordinal_});
  }
  /// Context c0 with in-order queue q0 and a 64-byte buffer b0: operations 1-3.
  void basics() {
    run("create_context", {"c0"});
    run("create_command_queue", {"c0", "q0"}, {{"order", 0, "in"}});
    run("create_buffer", {"c0", "b0"}, {{"bytes", 64, {}}});
  }
  template <typename Failure = DeviceError>
  std::string failure(std::string_view op, std::vector<std::string> names,
                      std::vector<ModelCall::Arg> args = {}) {
    try {
      run(op, std::move(names), std::move(args));
    } catch (const Failure& e) {
      return e.what();
    }
    ADD_FAILURE() << op << " did not fail";
    return {};
  }

  std::unique_ptr<ModelExecutor> executor_;
  uint32_t ordinal_ = 0;
};

TEST_F(OpenClModelExecutorTest, ASequenceOfOwnersEndedFirstPassesAndLeavesNothing) {
  ModelExecutor& executor = make(openClApi());
  EXPECT_NE(executor.description().find("queues"), std::string::npos) << executor.description();
  basics();
  run("build_program", {"c0", "p0"});
  run("create_kernel", {"p0", "k0"});
  run("create_user_event", {"c0", "e0"});
  run("set_mem_object_destructor_callback", {"b0"});
  run("enqueue_ndrange_kernel", {"q0", "k0", "b0", "e0"}, {{"seed", 7, {}}});
  run("release_event", {"e0"});  // unset: the executor's own reference still sets it
  run("release_kernel", {"k0"});
  run("release_program", {"p0"});
  run("release_context", {"c0"});
  run("enqueue_read_buffer", {"q0", "b0"});
  run("release_buffer", {"b0"});
  run("finish", {"q0"});
  run("release_command_queue", {"q0"});
  EXPECT_EQ(executor.leaked(), "");
}

TEST_F(OpenClModelExecutorTest, AFinishThatReturnsEarlyNamesTheStaleCommand) {
  OpenClApi api = standIn();
  api.enqueueWriteBuffer = gatedWrite;
  api.finish = earlyFinish;
  make(api);
  basics();
  run("enqueue_write_buffer", {"q0", "b0"}, {{"seed", 1, {}}});
  const std::string message = failure("finish", {"q0"});
  EXPECT_NE(message.find("clFinish q0 (operation 5) returned while 1 command enqueued before it"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("clEnqueueWriteBuffer q0 b0, operation 4"), std::string::npos) << message;
}

TEST_F(OpenClModelExecutorTest, ABlockingReadThatReturnsEarlyIsAnError) {
  OpenClApi api = standIn();
  api.enqueueWriteBuffer = gatedWrite;
  api.enqueueReadBuffer = earlyRead;
  make(api);
  basics();
  run("enqueue_write_buffer", {"q0", "b0"}, {{"seed", 1, {}}});
  const std::string message = failure("enqueue_read_buffer", {"q0", "b0"});
  EXPECT_NE(message.find("clEnqueueReadBuffer q0 b0, operation 5 (blocking) returned while 2 "
                         "commands"),
            std::string::npos)
      << message;
}

TEST_F(OpenClModelExecutorTest, AWaitForEventsThatReturnsEarlyIsAnError) {
  OpenClApi api = standIn();
  api.enqueueWriteBuffer = gatedWrite;
  api.waitForEvents = earlyWait;
  make(api);
  basics();
  run("enqueue_write_buffer", {"q0", "b0"}, {{"seed", 1, {}}});
  run("enqueue_marker", {"q0", "e0"});
  const std::string message = failure("wait_for_events", {"e0"});
  EXPECT_NE(message.find("clWaitForEvents e0, operation 6 returned while 2 commands"),
            std::string::npos)
      << message;
}

TEST_F(OpenClModelExecutorTest, AnEventCallbackThatNeverRunsIsAnError) {
  OpenClApi api = standIn();
  api.setEventCallback = droppedCallback;
  make(api);
  basics();
  run("enqueue_marker", {"q0", "e0"});
  run("set_event_callback", {"e0"});
  const std::string message = failure("wait_for_events", {"e0"});
  EXPECT_NE(message.find("the CL_COMPLETE callback of clEnqueueMarkerWithWaitList q0 e0, "
                         "operation 4 did not run within 100 ms"),
            std::string::npos)
      << message;
}

TEST_F(OpenClModelExecutorTest, AMemoryObjectNeverDeletedIsAnErrorAtAWaitAndALeakAtTheEnd) {
  OpenClApi api = standIn();
  api.setMemObjectDestructorCallback = droppedDestructor;
  ModelExecutor& executor = make(api);
  basics();
  run("release_buffer", {"b0"});
  const std::string message = failure("finish", {"q0"});
  EXPECT_NE(message.find("memory object b0 was not deleted"), std::string::npos) << message;
  EXPECT_NE(executor.leaked().find("memory object b0 was not deleted"), std::string::npos);
}

TEST_F(OpenClModelExecutorTest, DestructorCallbacksInRegistrationOrderAreAnError) {
  OpenClApi api = standIn();
  api.setMemObjectDestructorCallback = fifoDestructor;
  make(api);
  basics();
  run("set_mem_object_destructor_callback", {"b0"});
  run("set_mem_object_destructor_callback", {"b0"});
  run("release_buffer", {"b0"});
  const std::string message = failure("finish", {"q0"});
  EXPECT_NE(message.find("the destructor callbacks of b0 ran in the order 0, 1, 2"),
            std::string::npos)
      << message;
}

TEST_F(OpenClModelExecutorTest, BytesThatDifferFromTheWritesAreAMismatch) {
  OpenClApi api = standIn();
  api.enqueueWriteBuffer = corruptWrite;
  make(api);
  basics();
  run("enqueue_write_buffer", {"q0", "b0"}, {{"seed", 3, {}}});
  const std::string message = failure<DataMismatch>("enqueue_read_buffer", {"q0", "b0"});
  EXPECT_NE(message.find("buffer b0 (clEnqueueReadBuffer q0 b0, operation 5) byte 0 is"),
            std::string::npos)
      << message;
}

TEST_F(OpenClModelExecutorTest, AFillThatLandsLowerIsCaughtAtTheWindowAcrossThePowerOfTwo) {
  OpenClApi api = standIn();
  api.enqueueFillBuffer = wrappingFill;
  make(api);
  run("create_context", {"c0"});
  run("create_command_queue", {"c0", "q0"}, {{"order", 0, "in"}});
  run("create_buffer", {"c0", "b0"}, {{"bytes", kWrapAt + kWrapAt / 2, {}}});
  run("enqueue_fill_buffer", {"q0", "b0"}, {{"pattern", 0x5a5a5a5a, {}}});
  const std::string message = failure<DataMismatch>("enqueue_read_buffer", {"q0", "b0"});
  EXPECT_NE(message.find("byte " + std::to_string(kWrapAt) + " is"), std::string::npos) << message;
}

TEST_F(OpenClModelExecutorTest, LargeBuffersAreTheLargestTheDeviceAllowsAndReadAtWindows) {
  ModelExecutor& executor = make(openClApi());
  run("create_context", {"c0"});
  run("create_command_queue", {"c0", "q0"}, {{"order", 0, "in"}});
  // Past every device's largest allocation: a size the runtime would refuse, were it asked.
  run("create_buffer", {"c0", "b0"}, {{"bytes", uint64_t{1} << 40, {}}});
  run("create_sub_buffer", {"b0", "sb0"}, {{"offset", 0xffffffff, {}}, {"bytes", 4096, {}}});
  run("enqueue_write_buffer", {"q0", "b0"}, {{"seed", 9, {}}});
  run("enqueue_read_buffer", {"q0", "b0"});
  run("enqueue_read_sub_buffer", {"q0", "sb0"});
  run("release_sub_buffer", {"sb0"});
  run("release_buffer", {"b0"});
  run("release_command_queue", {"q0"});
  run("release_context", {"c0"});
  EXPECT_EQ(executor.leaked(), "");
}

TEST_F(OpenClModelExecutorTest, AForeignContextTheRuntimeAcceptsIsAnError) {
  OpenClApi api = standIn();
  api.enqueueWriteBuffer = acceptingWrite;
  make(api);
  basics();
  run("create_context", {"c1"});
  run("create_buffer", {"c1", "b1"}, {{"bytes", 64, {}}});
  const std::string message = failure("enqueue_write_buffer", {"q0", "b1"}, {{"seed", 1, {}}});
  EXPECT_NE(message.find("clEnqueueWriteBuffer: CL_SUCCESS for an object or event of another "
                         "context than the queue's, where the spec requires CL_INVALID_CONTEXT"),
            std::string::npos)
      << message;
}

TEST_F(OpenClModelExecutorTest, AForeignContextTheRuntimeRefusesIsNoOperation) {
  ModelExecutor& executor = make(openClApi());
  basics();
  run("create_context", {"c1"});
  run("create_user_event", {"c1", "e0"});
  run("enqueue_marker", {"q0", "e0", "e1"});  // CL_INVALID_CONTEXT: e1 is absent
  run("wait_for_events", {"e1"});
  run("set_event_callback", {"e1"});
  run("release_event", {"e1"});
  run("release_event", {"e0"});
  run("release_buffer", {"b0"});
  run("release_command_queue", {"q0"});
  run("release_context", {"c1"});
  run("release_context", {"c0"});
  EXPECT_EQ(executor.leaked(), "");
}

}  // namespace
}  // namespace gpufuzz
