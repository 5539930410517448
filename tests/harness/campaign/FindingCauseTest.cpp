// FindingCauseTest.cpp: a shrink cut short by a stop says so (never "reproduced 0/5" for
// confirmations that did not run) and is saved under its final folder's name; findings of one
// cause are one finding, counting its hits and keeping its other minimal sequences as variants,
// the smallest as minimal.seq; the shrinker reaches one canonical smallest form; a crash in the
// system's libraries is bucketed by their caller.
#include <gtest/gtest.h>

#include <atomic>

#include "harness/base/AtomicFile.h"
#include "harness/campaign/FindingStore.h"
#include "harness/search/Cause.h"
#include "harness/search/Minimize.h"
#include "harness/supervise/CrashSite.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

/// Trials on sim under context-first and max-26.5.0 (the seed's hang) that stop on demand.
struct StoppableTrials {
  testing::ScratchDir work;
  std::atomic<bool> stop{false};
  DeadlineCalibrator deadlines{[] {
    DeadlineSettings s = DeadlineSettings::forBackend("sim");
    s.fixed = Millis{150};
    return s;
  }()};
  TrialRunner runner{[this] {
                       TrialSetup setup = testing::SimTrials::setupFor(TeardownPolicy::ContextFirst,
                                                                       "max-26.5.0", work.path());
                       setup.stopRequested = [this] { return stop.load(); };
                       return setup;
                     }(),
                     deadlines};
};

constexpr const char* kLongHang =
    "create a\ndraw a\ncreate b\ndraw b\ndestroy a\nsync b\ncreate c\ndraw c\n";

TEST(HonestStops, AShrinkCutShortIsNotConfirmedAndNamesItsFinalFolder) {
  StoppableTrials trials;
  const Sequence failing = parseSequence(kLongHang, "long.seq");
  const TrialResult first = trials.runner.run(failing, TrialMode::Confirmed);
  ASSERT_EQ(first.outcome.cls, OutcomeClass::Hang) << outcomeText(first.outcome);
  Shrinker shrinker(trials.runner, 2);
  // The stop comes with the first accepted edit: the rest of the shrink and every confirmation
  // are cut short.
  const Finding f =
      minimizeFailure(shrinker, trials.runner, MinimizeRequest{failing, first, 1, "test", 5},
                      [&](const std::string&) { trials.stop = true; });
  EXPECT_TRUE(f.stopped);
  EXPECT_EQ(f.reproductionText(), "not confirmed (stopped)");
  EXPECT_EQ(f.confirmations, 0U);
  EXPECT_LT(f.minimal.ops.size(), failing.ops.size());

  testing::ScratchDir dir;
  FindingStore store(dir.path() / "findings");
  const auto [isNew, folder] = store.record(f);
  ASSERT_TRUE(isNew);
  const std::string json = readFile(folder / "finding.json");
  EXPECT_NE(json.find("\"confirmation\": \"not confirmed (stopped)\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"stopped\": true"), std::string::npos) << json;
  EXPECT_NE(json.find("\"file\": \"" + (folder / "minimal.seq").string() + "\""), std::string::npos)
      << json;
  EXPECT_EQ(json.find(".staging-"), std::string::npos) << json;
}

TEST(HonestStops, AConfirmedFindingSaysHowOftenItReproduced) {
  Finding f;
  f.reproduced = 4;
  f.confirmations = 5;
  EXPECT_EQ(f.reproductionText(), "reproduced 4/5");
}

Finding findingOf(const std::string& text, const std::string& cause) {
  Finding f;
  f.minimal = parseSequence(text, "t.seq");
  f.outcome = RunOutcome{
      OutcomeClass::Spin, At{static_cast<uint32_t>(f.minimal.ops.size())}, "draw", "detail", {}};
  f.cause = cause;
  return f;
}

TEST(OneCause, FindingsOfOneCauseAreOneFindingWithItsVariantsTheSmallestMinimal) {
  testing::ScratchDir dir;
  const Finding six =
      findingOf("create r0\ncreate r1\ncreate r2\ndraw r2\ndraw r2\ndraw r1\n", "spin-3rd-launch");
  const Finding five =
      findingOf("create r0\ndraw r0\ndraw r0\ncreate r1\ndraw r1\n", "spin-3rd-launch");
  const Finding other = findingOf("create r0\ndraw r0\n", "another");
  FindingStore store(dir.path());
  const auto [firstNew, folder] = store.record(six);
  EXPECT_TRUE(firstNew);
  const auto [secondNew, same] = store.record(five);
  EXPECT_FALSE(secondNew);
  EXPECT_EQ(same, folder);
  EXPECT_FALSE(store.record(five).first);
  EXPECT_TRUE(store.record(other).first);
  EXPECT_EQ(store.size(), 2U);
  EXPECT_TRUE(store.knows(six.signature()));
  EXPECT_TRUE(store.knows(five.signature()));
  EXPECT_EQ(normalizedOperations(loadSequence((folder / "minimal.seq").string())),
            normalizedOperations(five.minimal))
      << "the smallest variant is minimal.seq";
  EXPECT_TRUE(std::filesystem::exists(folder / variantFile(six.signature())));
  EXPECT_FALSE(std::filesystem::exists(folder / variantFile(five.signature())));
  const std::string json = readFile(folder / "finding.json");
  EXPECT_NE(json.find("\"hits\": 3"), std::string::npos) << json;
  EXPECT_NE(json.find("\"variants\": 1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"cause\": \"spin-3rd-launch\""), std::string::npos) << json;
  // Known again on resume, by cause.
  FindingStore resumed(dir.path());
  EXPECT_EQ(resumed.size(), 2U);
  EXPECT_FALSE(resumed.record(six).first);
}

TEST(OneCause, AFindingWithoutStacksIsTheOneWithThem) {
  testing::ScratchDir dir;
  FindingStore store(dir.path());
  const std::string needs = "spin at draw; needs introduces-context x2 queues-work x3";
  EXPECT_TRUE(
      store.record(findingOf("create r0\ndraw r0\ndraw r0\ncreate r1\ndraw r1\n", needs)).first);
  EXPECT_FALSE(store
                   .record(findingOf("create r0\ncreate r1\ndraw r1\ndraw r1\ndraw r1\n",
                                     needs + "; frames gpufuzz::spinForever"))
                   .first);
  EXPECT_FALSE(
      store.record(findingOf("create r0\ncreate r1\ndraw r0\ndraw r1\ndraw r1\n", needs)).first);
  // Two stacks that differ are two causes.
  EXPECT_TRUE(store
                  .record(findingOf("create r0\ncreate r1\ndraw r1\ndraw r0\ndraw r1\n",
                                    needs + "; frames gpufuzz::hangForever"))
                  .first);
  EXPECT_EQ(store.size(), 2U);
}

TEST(OneCause, TheCauseIsWhatTheFailureNeedsNotWhichNamesOrOrder) {
  // The third launch spins when it comes from a second context: two sequences that differ in
  // which renderer draws and in order need the same (two contexts, three launches).
  const Sequence a = parseSequence("create r0\ndraw r0\ndraw r0\ncreate r1\ndraw r1\n", "a.seq");
  const Sequence b = parseSequence("create r0\ncreate r1\ndraw r1\ndraw r0\ndraw r1\n", "b.seq");
  const Sequence c = parseSequence("create r0\ndraw r0\ndraw r0\ndraw r0\n", "c.seq");
  const RunOutcome spin{OutcomeClass::Spin, At{5}, "draw", "", {}};
  const auto cause = [&](const Sequence& s, const RunOutcome& o) {
    return failureCause(o, s, TeardownPolicy::Shipped, "");
  };
  EXPECT_EQ(cause(a, spin), cause(b, spin));
  EXPECT_NE(cause(a, spin), cause(c, RunOutcome{OutcomeClass::Spin, At{4}, "draw", "", {}}));
  EXPECT_NE(cause(a, spin), cause(a, RunOutcome{OutcomeClass::Hang, At{5}, "draw", "", {}}));
  EXPECT_NE(cause(a, spin).find("introduces-context x2"), std::string::npos) << cause(a, spin);
}

TEST(OneCause, StacksAddTheStuckThreadsTopFrames) {
  const std::string stacks =
      "Thread 2 (Thread 0x7f (LWP 11) \"worker\"):\n"
      "#0  0x00007f in __futex_wait () at futex.c:1\n"
      "#1  0x00007f in start_thread () at pthread.c:2\n"
      "\n"
      "Thread 1 (Thread 0x7e (LWP 10) \"gpufuzz-runner\"):\n"
      "#0  0x00007ff5 in __libc_pause () at pause.c:29\n"
      "#1  0x0000560d in gpufuzz::(anonymous namespace)::hangForever () at FaultInjector.cpp:31\n"
      "#2  gpufuzz::FaultInjector::before (this=0x1, site=...) at FaultInjector.cpp:73\n"
      "#3  0x0000560d in gpufuzz::Device::intercept (this=0x2, site=...) at Device.cpp:26\n"
      "#4  0x0000560d in gpufuzz::Device::allocBuffer (this=0x3, ctx=3) at Device.cpp:48\n";
  EXPECT_EQ(topFrames(stacks, 3),
            (std::vector<std::string>{"__libc_pause", "gpufuzz::(anonymous namespace)::hangForever",
                                      "gpufuzz::FaultInjector::before"}));
  EXPECT_TRUE(topFrames("", 3).empty());
  const Sequence a = parseSequence("create r0\ndestroy r0\ncreate r1\n", "a.seq");
  const RunOutcome hang{OutcomeClass::Hang, At{3}, "create", "", {}};
  EXPECT_NE(failureCause(hang, a, TeardownPolicy::ContextFirst, stacks),
            failureCause(hang, a, TeardownPolicy::ContextFirst, ""));
}

}  // namespace
}  // namespace gpufuzz

namespace gpufuzz {
namespace {

// One runtime fault met by minimal sequences of different needs is one cause: an error's cause
// is the runtime's verdict, its run's names and numbers masked, never the VUID's own number.
TEST(OneCause, AnErrorIsItsVerdictWhateverTheSequenceNeeds) {
  const Sequence a = parseSequence("create r0\ndraw r0\ndestroy r0\n", "a.seq");
  const Sequence b = parseSequence("create r0\ncreate r1\ndraw r1\ndraw r0\ndestroy r1\n", "b.seq");
  const auto error = [](std::string detail) {
    return RunOutcome{OutcomeClass::Error, At{3}, "destroy", std::move(detail), {}};
  };
  const auto cause = [](const RunOutcome& o, const Sequence& s) {
    return failureCause(o, s, TeardownPolicy::Shipped, "");
  };
  const std::string first = cause(error("clReleaseEvent e1: CL_SUCCESS at 0x7f12, 3 left"), a);
  EXPECT_EQ(first, cause(error("clReleaseEvent e12: CL_SUCCESS at 0x5a00, 14 left"), b));
  EXPECT_EQ(first, "error; says clReleaseEvent ?: CL_SUCCESS at 0x?, ? left");
  // The same verdict at another operation is the same fault, as a crash's frames are.
  RunOutcome atFinish = error("clReleaseEvent e4: CL_SUCCESS at 0x9c00, 1 left");
  atFinish.op = "sync";
  EXPECT_EQ(first, cause(atFinish, b));
  EXPECT_NE(first, cause(error("clReleaseEvent e1: CL_INVALID_EVENT at 0x7f12, 3 left"), a));
  const RunOutcome vuid{OutcomeClass::Invalid,
                        At{3},
                        "destroy",
                        "vkDestroySemaphore: VUID-vkDestroySemaphore-semaphore-05149: in use",
                        {}};
  EXPECT_NE(cause(vuid, a).find("semaphore-05149: in use"), std::string::npos) << cause(vuid, a);
  // Without words of its own, an error is what it needs, as a hang is.
  EXPECT_NE(cause(error(""), a), cause(error(""), b));
}

// A verdict keeps what tells one fault from another and drops what varies with the sequence:
// counts and the words that agree with them, names, addresses, sizes, and the operation's place.
TEST(OneCause, AVerdictDropsCountsTheirGrammarAndTheOperationsPlace) {
  EXPECT_EQ(verdictCause("cuMemAlloc: 4096 bytes: CUDA_ERROR_OUT_OF_MEMORY"),
            verdictCause("cuMemAlloc: 1 byte: CUDA_ERROR_OUT_OF_MEMORY"));
  EXPECT_NE(verdictCause("cuMemAlloc: 4096 bytes: CUDA_ERROR_OUT_OF_MEMORY"),
            verdictCause("cuMemAlloc: 4096 bytes: CUDA_ERROR_INVALID_VALUE"));
  EXPECT_EQ(verdictCause("clSetUserEventStatus e3: CL_SUCCESS, operation 7"),
            verdictCause("clSetUserEventStatus e0: CL_SUCCESS, at the end"));
  EXPECT_EQ(verdictCause("the destructor callbacks of m2 ran in the order 0, 1, 2"),
            verdictCause("the destructor callbacks of m0 ran in the order 0, 1"));
  // Words whose final s is no plural's stay as they are.
  EXPECT_EQ(verdictCause("vkDestroyBuffer: buffer 3 was already freed"),
            "says vkDestroyBuffer: buffer ? was already freed");
  EXPECT_EQ(verdictCause("2 commands were not complete"),
            verdictCause("1 command was not complete"));
  // A client names the leftover it released before the runtime's words: one verdict still.
  EXPECT_EQ(verdictCause("destroy r0: destroy_context: context 3 has 2 commands queued"),
            verdictCause("destroy_context: context 1 has 1 command queued"));
  EXPECT_EQ(verdictCause("release buffer b2: free: buffer 4 is busy"),
            verdictCause("free: buffer 1 is busy"));
  // What tells faults apart stays: the call, the runtime's error name, the rule's VUID.
  EXPECT_NE(verdictCause("vkCmdDraw: VUID-vkCmdDraw-None-08600: x"),
            verdictCause("vkCmdDraw: VUID-vkCmdDraw-None-08601: x"));
  EXPECT_NE(verdictCause("clReleaseEvent e1: CL_INVALID_EVENT"),
            verdictCause("clReleaseMemObject m1: CL_INVALID_EVENT"));
}

/// A Python target's stacks, as the harness writes them from its faulthandler record, stuck in
/// `top` under the target's `submit`.
std::string pythonStuckIn(const std::string& top, int line) {
  return std::string(kPythonStacksBy) +
         ", process 7\n"
         "Thread 1 (Python thread 0x00007f3a5c000000):\n"
         "#0  0x0000000000000000 in read_events () at /src/gpufuzz_target.py:90 [system]\n"
         "Thread 2 (Python thread 0x00007f3a5b9ff6c0)" +
         std::string(kInHandler) +
         ":\n"
         "#0  0x0000000000000000 in wait () at /usr/lib/python3.11/threading.py:320 [system]\n"
         "#1  0x0000000000000000 in " +
         top + " () at /src/target.py:" + std::to_string(line) +
         " [program]\n"
         "#2  0x0000000000000000 in submit () at /src/target.py:200 [program]\n"
         "#3  0x0000000000000000 in _dispatch () at /src/gpufuzz_target.py:722 [system]\n";
}

// A target's hang with its own frames is keyed by them, as a crash is: two orders of one step,
// or two operations into one stuck wait, are one bug; other frames are another.
TEST(OneCause, ATargetsHangIsWhereItsOwnFramesAreStuck) {
  const Sequence a = parseSequence("create r0\ndraw r0\ndestroy r0\n", "a.seq");
  const Sequence b = parseSequence("create r0\ncreate r1\ndraw r1\ndraw r0\ndestroy r1\n", "b.seq");
  const auto cause = [](const std::string& op, const Sequence& s, const std::string& stacks) {
    return failureCause(RunOutcome{OutcomeClass::Hang, At{3}, op, "no progress", {}}, s,
                        TeardownPolicy::Shipped, stacks);
  };
  const std::string first = cause("destroy", a, pythonStuckIn("wait_for_image", 40));
  EXPECT_EQ(first, cause("draw", b, pythonStuckIn("wait_for_image", 44)));
  EXPECT_EQ(first.find("needs"), std::string::npos) << first;
  EXPECT_NE(first.find("frames wait_for_image submit"), std::string::npos) << first;
  EXPECT_NE(first, cause("destroy", a, pythonStuckIn("wait_for_fence", 40)));
  // A C++ target waiting in libc is stuck in its own function that called it.
  const auto native = [](const std::string& handler) {
    return std::string(kTargetStacksBy) + ", process 9\nThread 1 (LWP 9 \"t\")" +
           std::string(kInHandler) +
           ":\n#0  0x00007f7aeb0ed503 in clock_nanosleep () from /lib/libc.so.6 [system]\n"
           "#1  0x00007f7aeb0f1e53 in __nanosleep () from /lib/libc.so.6 [system]\n"
           "#2  0x0000562f5488c6a8 in " +
           handler +
           " () from /bin/t [program]\n"
           "#3  0x0000562f548a6ef3 in gpufuzz::target::runSequence () from /bin/t [program]\n";
  };
  const std::string waiting = cause("destroy", a, native("Runtime::waitForImage"));
  EXPECT_NE(waiting.find("frames Runtime::waitForImage"), std::string::npos) << waiting;
  EXPECT_EQ(waiting, cause("draw", b, native("Runtime::waitForImage")));
  // A debugger's frames of the runner stay with what the hang needs.
  EXPECT_NE(cause("destroy", a, ""), cause("draw", b, ""));
}

// rusticl 22.3.6's stale event status, as four verdicts of one campaign: a wait that came back
// before its work was done is one fault whichever queue wait showed it, with however many
// commands pending, at whichever operation.
TEST(OneCause, OneBrokenWaitIsOneCauseWhicheverCallMetIt) {
  const Sequence a = parseSequence("create r0\ndraw r0\ndestroy r0\n", "a.seq");
  const auto cause = [&](const std::string& op, const std::string& detail) {
    return failureCause(RunOutcome{OutcomeClass::Error, At{3}, op, detail, {}}, a,
                        TeardownPolicy::Shipped, "");
  };
  const std::string finish = cause("destroy",
                                   "clFinish returned while 1 command enqueued before it was "
                                   "CL_SUBMITTED (clEnqueueWriteBuffer)");
  EXPECT_EQ(finish, cause("destroy",
                          "clFinish returned while 2 commands enqueued before it were not "
                          "complete: clEnqueueWriteBuffer CL_SUBMITTED, clEnqueueNDRangeKernel "
                          "CL_QUEUED"));
  EXPECT_EQ(finish, cause("end",
                          "clFinish returned while 3 commands enqueued before it were not "
                          "complete: clEnqueueWriteBuffer CL_SUBMITTED, clEnqueueWriteBuffer "
                          "CL_SUBMITTED, clEnqueueNDRangeKernel CL_SUBMITTED"));
  EXPECT_EQ(finish, cause("read_back",
                          "clEnqueueReadBuffer (blocking) returned while 2 commands enqueued "
                          "before it were not complete: clEnqueueWriteBuffer CL_SUBMITTED, "
                          "clEnqueueNDRangeKernel CL_SUBMITTED"));
  // The runtime models' wording, with the model's operation in the wait's label.
  EXPECT_EQ(finish, cause("finish",
                          "clFinish q0, operation 9 returned while 1 command enqueued "
                          "before it was CL_SUBMITTED (clEnqueueCopyBuffer m1 m2)"));
  EXPECT_EQ(finish, cause("sync",
                          "cuStreamSynchronize returned while work enqueued before it was "
                          "not complete (cuStreamQuery: CUDA_ERROR_NOT_READY)"));
  EXPECT_EQ(finish, cause("sync",
                          "the sim queue's drain returned while 1 command enqueued before "
                          "it was still queued (upload)"));
  EXPECT_EQ(finish, "error; a wait on a queue returned before its work was done");
  // Another kind of wait is another fault: a runtime's fence or event wait is other code.
  const std::string fence =
      cause("wait", "vkWaitForFences returned while fence f1 is VK_NOT_READY (vkGetFenceStatus)");
  EXPECT_NE(finish, fence);
  EXPECT_EQ(fence, cause("wait",
                         "vkWaitForFences returned while fence f3 is VK_NOT_READY "
                         "(vkGetFenceStatus)"));
  const std::string event = cause("sync",
                                  "cuEventSynchronize returned while the work it waited "
                                  "for was pending: cuEventQuery(e1): CUDA_ERROR_NOT_READY");
  EXPECT_NE(event, finish);
  EXPECT_NE(event, fence);
  EXPECT_EQ(event, cause("wait",
                         "clWaitForEvents e2 e4, operation 6 returned while 2 commands "
                         "enqueued before it were not complete: x CL_QUEUED, y CL_QUEUED"));
  EXPECT_NE(cause("wait",
                  "vkWaitSemaphores returned while timeline t0 is at 1, below the value "
                  "2 it waited for"),
            fence);
  // A verdict about a wait that is not an early return stays its own.
  EXPECT_NE(finish, cause("sync", "clFinish: CL_OUT_OF_RESOURCES"));
}

}  // namespace
}  // namespace gpufuzz

namespace gpufuzz {
namespace {

/// A runner's crash text whose crashing thread has `top` above a driver's pool teardown.
std::string crashAbove(const std::string& top) {
  return std::string(kRunnerCrashFramesBy) +
         ", SIGSEGV, process 7\n"
         "Thread 1 (crashed):\n" +
         top +
         "#7  0x00007fdcb1586a05 in ?? () from /usr/lib/libcuda.so.580.1 [runtime]\n"
         "#8  0x00007fdcb17029e0 in cuMemPoolDestroy () from /usr/lib/libcuda.so.580.1 [runtime]\n"
         "#9  0x0000558a23227a13 in gpufuzz::Pool::teardown () from /bin/runner [program]\n"
         "#10  0x0000558a23238d0c in gpufuzz::Device::destroyContext () from /bin/runner "
         "[program]\n";
}

// The system's frames on top of a runtime's or a program's are not where a crash is: on the
// H200 one driver fault died in pthread_spin_lock or in free under cuMemPoolDestroy, and each
// was a cause of its own.
TEST(OneCause, TheSystemsFramesAboveACallerAreNotTheCrashState) {
  const std::string bare = crashAbove("");
  const std::string spinLock = crashAbove(
      "#0  0x00007fdcb70a41d6 in pthread_spin_lock () from /usr/lib/x86_64-linux-gnu/libc.so.6 "
      "[system]\n");
  const std::string freed = crashAbove(
      "#0  0x00007fee5689ec0c in __libc_free () from /usr/lib/x86_64-linux-gnu/libc.so.6 "
      "[system]\n"
      "#1  0x00007fee568297b6 in ?? () from /usr/lib/x86_64-linux-gnu/libc.so.6 [system]\n");
  const std::vector<std::string> state{"in libcuda.so.580.1", "cuMemPoolDestroy",
                                       "gpufuzz::Pool::teardown"};
  EXPECT_EQ(crashState(bare), state);
  EXPECT_EQ(crashState(spinLock), state);
  EXPECT_EQ(crashState(freed), state);
  const Sequence a = parseSequence("ctx_create c0\nctx_destroy c0\n", "a.seq");
  const RunOutcome crash{OutcomeClass::Crash, At{2}, "ctx_destroy", "SIGSEGV", {}};
  EXPECT_EQ(failureCause(crash, a, TeardownPolicy::Shipped, spinLock),
            failureCause(crash, a, TeardownPolicy::Shipped, freed));
  // The program's own frame below memcpy is its crash; a crash with only the system's frames
  // keeps them.
  const std::string copied = std::string(kRunnerCrashFramesBy) +
                             ", SIGSEGV, process 8\nThread 1 (crashed):\n"
                             "#0  0x1 in __memmove_avx_unaligned () from /lib/libc.so.6 [system]\n"
                             "#1  0x2 in gpufuzz::Upload::copy () from /bin/runner [program]\n";
  EXPECT_EQ(crashState(copied, 1), std::vector<std::string>{"gpufuzz::Upload::copy"});
  const std::string systemOnly = std::string(kRunnerCrashFramesBy) +
                                 ", SIGSEGV, process 9\nThread 1 (crashed):\n"
                                 "#0  0x1 in __libc_free () from /lib/libc.so.6 [system]\n"
                                 "#1  0x2 in __libc_start_main () from /lib/libc.so.6 [system]\n";
  EXPECT_EQ(crashState(systemOnly), (std::vector<std::string>{"__libc_free", "__libc_start_main"}));
  // The runtime-call seam's wrapper between the runtime and its caller is no frame of the state.
  const std::string throughSeam =
      std::string(kRunnerCrashFramesBy) +
      ", SIGSEGV, process 10\nThread 1 (crashed):\n"
      "#0  0x1 in cuMemPoolDestroy () from /lib/libcuda.so.1 [runtime]\n"
      "#1  0x2 in cudaError_enum gpufuzz::seam::Entry<cudaError_enum "
      "(*)(CUmemPoolHandle_st*)>::call<> () from /bin/runner [program]\n"
      "#2  0x3 in gpufuzz::Pool::teardown () from /bin/runner [program]\n";
  EXPECT_EQ(crashState(throughSeam),
            (std::vector<std::string>{"cuMemPoolDestroy", "gpufuzz::Pool::teardown"}));
}

// A spin and a crash meet in the call the program made into the runtime, whatever inner frames
// each stopped in: on the H100 the driver spun under cuMemPoolDestroy where it crashed.
TEST(OneCause, TheRuntimesEntryIsTheCallTheProgramMade) {
  EXPECT_EQ(runtimeEntry(crashAbove("")), "cuMemPoolDestroy");
  const std::string stuck =
      "stacks by cuda-gdb (/usr/local/cuda/bin/cuda-gdb), process 7\n"
      "Thread 2 (Thread 0x7f1 (LWP 12) \"cuda-EvtHandlr\"):\n"
      "#0  0x00007f in poll () from /lib/x86_64-linux-gnu/libc.so.6\n"
      "#1  0x00007e in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
      "\n"
      "Thread 1 (Thread 0x7f0 (LWP 10) \"gpufuzz-runner\"):\n"
      "#0  0x00007d in pthread_spin_lock () from /lib/x86_64-linux-gnu/libc.so.6\n"
      "#1  0x00007c in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
      "#2  0x00007b in cuMemPoolDestroy () from /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
      "#3  0x00005a in gpufuzz::Pool::teardown (this=0x1) at renderer/cuda/Pool.cpp:40\n"
      "#4  0x000059 in gpufuzz::Device::destroyContext (this=0x2) at "
      "renderer/device/Device.cpp:9\n";
  EXPECT_EQ(runtimeEntry(stuck), "cuMemPoolDestroy");
  // Stuck in the program's own code, or in a runtime's frames without a name: no entry.
  const std::string own =
      "stacks by gdb (/usr/bin/gdb), process 8\n"
      "Thread 1 (Thread 0x7f0 (LWP 11) \"gpufuzz-runner\"):\n"
      "#0  gpufuzz::Device::wait (this=0x2) at renderer/device/Device.cpp:12\n"
      "#1  0x000059 in gpufuzz::executeSequence () at harness/runner/SequenceExecutor.cpp:251\n";
  EXPECT_EQ(runtimeEntry(own), "");
  const std::string unnamed =
      "stacks by gdb (/usr/bin/gdb), process 9\n"
      "Thread 1 (Thread 0x7f0 (LWP 11) \"gpufuzz-runner\"):\n"
      "#0  0x00007c in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
      "#1  0x00005a in gpufuzz::Pool::teardown (this=0x1) at renderer/cuda/Pool.cpp:40\n";
  EXPECT_EQ(runtimeEntry(unnamed), "");
}

// A threaded run's other threads wait for the stuck one in the program's own code: the stuck
// thread is the one inside a runtime's call, whichever thread the stacks list first.
TEST(OneCause, TheStuckThreadIsTheOneInsideTheRuntime) {
  const std::string stacks =
      std::string(kRunnerStacksBy) +
      ", process 7\n"
      "Thread 1 (LWP 7 \"gpufuzz-runner\"):\n"
      "#0  0x00007f in pthread_cond_wait () from /lib/x86_64-linux-gnu/libc.so.6 [system]\n"
      "#1  0x00005b in gpufuzz::ThreadedSchedule::wait () from /bin/gpufuzz-runner [program]\n"
      "Thread 2 (LWP 8 \"gpufuzz-runner\"):\n"
      "#0  0x00007d in pthread_spin_lock () from /lib/x86_64-linux-gnu/libc.so.6 [system]\n"
      "#1  0x00007b in cuMemPoolDestroy () from /usr/lib/libcuda.so.1 [runtime]\n"
      "#2  0x00005a in gpufuzz::Pool::teardown () from /bin/gpufuzz-runner [program]\n";
  const std::vector<CrashFrame> frames = stuckFrames(stacks);
  ASSERT_EQ(frames.size(), 3U) << stacks;
  EXPECT_EQ(frames[1].function, "cuMemPoolDestroy");
  EXPECT_EQ(runtimeEntry(stacks), "cuMemPoolDestroy");
  EXPECT_EQ(topFrames(stacks, 2),
            (std::vector<std::string>{"pthread_spin_lock", "cuMemPoolDestroy"}));
  // Without a thread in a runtime's call, the first of the program's.
  const std::string waiting = stacks.substr(0, stacks.find("Thread 2"));
  EXPECT_EQ(topFrames(waiting, 2),
            (std::vector<std::string>{"pthread_cond_wait", "gpufuzz::ThreadedSchedule::wait"}));
}

}  // namespace
}  // namespace gpufuzz
