// MarkedRunTest.cpp: calls that fail on purpose (docs/failures.md). A marked call fails at the
// device seam with the backend's error; the operation ends with `fail`, what uses the names it
// never made is skipped, and the rest of the run holds. Campaigns with --inject find error-path
// bugs that plans plant behind `injected` and `ctx_injected`, and never without --inject.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness/base/AtomicFile.h"
#include "harness/cli/Session.h"
#include "harness/protocol/Events.h"
#include "model/Sequence.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

namespace fs = std::filesystem;

TEST(FailEvents, RoundTripAndComeInTheirPlace) {
  const auto fail = parseEvent("fail 2 buf_alloc: SIM_OUT_OF_MEMORY (injected)");
  ASSERT_TRUE(fail.has_value());
  EXPECT_EQ(fail->kind, Event::Kind::Fail);
  EXPECT_EQ(fail->at, At{2});
  EXPECT_EQ(fail->detail, "buf_alloc: SIM_OUT_OF_MEMORY (injected)");
  EXPECT_EQ(formatEvent(*fail), "fail 2 buf_alloc: SIM_OUT_OF_MEMORY (injected)");
  const auto skip = parseEvent("skip 3");
  ASSERT_TRUE(skip.has_value());
  EXPECT_EQ(skip->kind, Event::Kind::Skip);
  EXPECT_EQ(formatEvent(*skip), "skip 3");
  for (const char* bad : {"fail 2", "fail end oops", "skip", "skip end", "skip 3 more", "fail x y"})
    EXPECT_FALSE(parseEvent(bad).has_value()) << bad;

  EventOrder order({"create", "draw", "read_back"});
  EXPECT_EQ(order.accept(*parseEvent("start 3")), "");
  EXPECT_NE(order.accept(*parseEvent("fail 1 x")), "") << "a fail without its begin";
  EXPECT_EQ(order.accept(*parseEvent("begin 1 create")), "");
  EXPECT_NE(order.accept(*parseEvent("skip 2")), "") << "a skip while an operation runs";
  EXPECT_EQ(order.accept(*parseEvent("fail 1 buf_alloc: SIM_OUT_OF_MEMORY")), "");
  EXPECT_NE(order.accept(*parseEvent("skip 3")), "") << "out of order";
  EXPECT_EQ(order.accept(*parseEvent("skip 2")), "");
  EXPECT_NE(order.accept(*parseEvent("begin 2 draw")), "") << "a skipped operation never begins";
  EXPECT_EQ(order.accept(*parseEvent("skip 3")), "");
  EXPECT_EQ(order.accept(*parseEvent("begin end end")), "");
  EXPECT_EQ(order.accept(*parseEvent("done end")), "");
  EXPECT_EQ(order.accept(*parseEvent("outcome pass - - ")), "");
}

/// `gpufuzz-runner` on `text` (a sim sequence file) with the events on stdout's neighbour:
/// the runner's printout and exit status.
testing::CommandResult runMarked(const testing::ScratchDir& dir, const std::string& text,
                                 const std::string& options = "") {
  const fs::path file = dir.path() / "marked.seq";
  writeFileAtomically(file, text);
  return testing::runCommand((testing::binDir() / "gpufuzz-runner").string() +
                             " --backend sim --faults none " + options + " " + file.string() +
                             " 2>&1");
}

// The shipped renderer survives each failure: what it made is released, a failed destroy still
// releases everything, a failed set_textures keeps the old set. Each row was a leak or a wrong
// image before the renderer learnt it.
TEST(MarkedRun, TheShippedRendererSurvivesEachFailure) {
  testing::ScratchDir dir;
  const std::vector<std::string> files = {
      "create r0 !oom@2\n",
      "create r0 !host-oom@4\ndraw r0\n",
      "create r0\ndraw r0\ndestroy r0 !host-oom\n",
      "create r0\nset_textures r0 count=2\ndraw r0\nset_textures r0 count=3 !oom@2\ndraw r0\n"
      "read_back r0\n",
      "create r0\ndraw r0 !lost\nread_back r0\nsync r0 !host-oom\nread_back r0 !lost\n"
      "read_back r0\n",
      "ctx_create c0\nbuf_create c0 b0 !oom\nbuf_destroy b0\nbuf_create c0 b1\nctx_destroy c0\n",
  };
  for (const std::string& text : files) {
    const testing::CommandResult r = runMarked(dir, text);
    EXPECT_EQ(r.status, 0) << text << r.output;
    EXPECT_NE(r.output.find("failed as marked"), std::string::npos) << text << r.output;
    EXPECT_NE(r.output.find("outcome: pass"), std::string::npos) << text << r.output;
  }
}

TEST(MarkedRun, WhatUsesANameNeverMadeIsSkippedAndAMarkThatNeverComesDoesNothing) {
  testing::ScratchDir dir;
  const testing::CommandResult r = runMarked(
      dir, "create r0 !oom\ndraw r0\ncreate r1\nread_back r1 !host-oom@64\nread_back r0\n");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("1  create r0 !oom ... failed as marked: ctx_create: SIM_OUT_OF_MEMORY"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("2  draw r0 ... skipped"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("5  read_back r0 ... skipped"), std::string::npos) << r.output;
  // read_back makes one call that can run out of host memory: its 64th never comes.
  EXPECT_NE(r.output.find("4  read_back r1 !host-oom@64 ... ok"), std::string::npos) << r.output;
}

TEST(MarkedRun, AWordTheBackendCannotGiveIsBadInputAndABadMarkToo) {
  testing::ScratchDir dir;
  const testing::CommandResult bad = runMarked(dir, "create r0\ndraw r0 !oom\n");
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find("marked.seq:2:10: draw cannot fail with oom"), std::string::npos)
      << bad.output;
  const testing::CommandResult replay =
      testing::gpufuzz("replay --backend sim " + (dir.path() / "marked.seq").string());
  EXPECT_EQ(replay.status, 2) << replay.output;
  // OpenCL has no lost device: a mark that asks for one on pocl is refused with its place.
  writeFileAtomically(dir.path() / "lost.seq", "create r0\ndraw r0 !lost\n");
  const testing::CommandResult onPocl = testing::runCommand(
      (testing::binDir() / "gpufuzz-runner").string() + " --backend opencl --device pocl " +
      (dir.path() / "lost.seq").string() + " 2>&1");
  EXPECT_EQ(onPocl.status, 2) << onPocl.output;
  EXPECT_NE(onPocl.output.find("lost.seq:2:1: backend opencl cannot fail with lost"),
            std::string::npos)
      << onPocl.output;
}

/// `gpufuzz-runner` on a runtime model's file `text` on `backendArgs`.
testing::CommandResult runModelMarked(const testing::ScratchDir& dir, const std::string& text,
                                      const std::string& backendArgs) {
  const fs::path file = dir.path() / "marked.seq";
  writeFileAtomically(file, text);
  return testing::runCommand((testing::binDir() / "gpufuzz-runner").string() + " " + backendArgs +
                             " " + file.string() + " 2>&1");
}

// A runtime model's mark fails its executor's call at the runtime-call seam, before the runtime:
// the operation ends with `fail`, what uses its names is skipped, a failed ending operation still
// ends its names, and the release at the end leaves nothing.
TEST(RuntimeModelMarks, EachExecutorSurvivesAFailedCallAndSkipsWhatItNeverMade) {
  struct Case {
    std::string backend;
    std::string text;
    std::vector<std::string> lines;
  };
  const std::vector<Case> cases = {
      {"--backend opencl --device pocl",
       "# model: opencl\ncreate_context c0\ncreate_command_queue c0 q0\n"
       "create_buffer c0 b0 !oom\nenqueue_write_buffer q0 b0\ncreate_buffer c0 b1\n"
       "enqueue_fill_buffer q0 b1 !host-oom\nenqueue_read_buffer q0 b1\nfinish q0\n",
       {"3  create_buffer c0 b0 !oom ... failed as marked: clCreateBuffer",
        "CL_MEM_OBJECT_ALLOCATION_FAILURE", "4  enqueue_write_buffer q0 b0 ... skipped",
        "6  enqueue_fill_buffer q0 b1 !host-oom ... failed as marked", "CL_OUT_OF_HOST_MEMORY",
        "7  enqueue_read_buffer q0 b1 ... ok"}},
      {"--backend opencl --device pocl",
       "# model: opencl\ncreate_context c0 !host-oom\ncreate_command_queue c0 q0\n"
       "create_context c1\ncreate_user_event c1 e0\nrelease_context c1 !host-oom\n",
       {"1  create_context c0 !host-oom ... failed as marked",
        "2  create_command_queue c0 q0 ... "
        "skipped"}},
      {"--backend vulkan --device llvmpipe --validation on",
       "# model: vulkan\nbuffer_create b0\nmemory_allocate b0 m0 !oom\nmemory_read m0\n"
       "buffer_create b1\nmemory_allocate b1 m1\npool_create p0\ncmd_allocate p0 c0\n"
       "cmd_fill c0 b1\ncmd_end c0\nfence_create f0\nqueue_submit_fence c0 f0 !lost\n"
       "fence_wait f0\nmemory_read m1\nbuffer_create b2 !host-oom\nfence_create f1 !host-oom\n",
       {"2  memory_allocate b0 m0 !oom ... failed as marked: vkAllocateMemory",
        "VK_ERROR_OUT_OF_DEVICE_MEMORY", "3  memory_read m0 ... skipped",
        "11  queue_submit_fence c0 f0 !lost ... failed as marked", "VK_ERROR_DEVICE_LOST",
        // The driver's own host allocation fails, through the allocation callbacks, and the
        // driver answers with its own error.
        "14  buffer_create b2 !host-oom ... failed as marked: vkCreateBuffer: "
        "VK_ERROR_OUT_OF_HOST_MEMORY",
        "15  fence_create f1 !host-oom ... failed as marked: vkCreateFence: "
        "VK_ERROR_OUT_OF_HOST_MEMORY"}},
  };
  for (const Case& c : cases) {
    testing::ScratchDir dir;
    const testing::CommandResult r = runModelMarked(dir, c.text, c.backend);
    EXPECT_EQ(r.status, 0) << c.text << r.output;
    for (const std::string& line : c.lines)
      EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
    EXPECT_NE(r.output.find("outcome: pass"), std::string::npos) << c.text << r.output;
  }
}

// A word the runtime model does not declare for the operation is exit 2 with its place.
TEST(RuntimeModelMarks, AWordTheModelDoesNotDeclareIsBadInput) {
  testing::ScratchDir dir;
  const testing::CommandResult r =
      runModelMarked(dir, "# model: opencl\ncreate_context c0\ncreate_command_queue c0 q0 !lost\n",
                     "--backend opencl --device pocl");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("marked.seq:3:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cannot fail with lost"), std::string::npos) << r.output;
}

// Each call of these files that can fail is failed in a run of its own, and every run passes:
// the executors' error paths that sweeps of the whole corpora found broken (docs/failures.md).
TEST(RuntimeModelMarks, ASweepOfEachExecutorsErrorPathsPasses) {
  const std::string root = GPUFUZZ_SOURCE_DIR;
  struct Case {
    std::string backend;
    std::vector<std::string> files;
  };
  const std::vector<Case> cases = {
      {"--backend opencl --device pocl",
       {"opencl/finish.seq", "opencl/release-buffer-while-written.seq",
        "opencl/destructor-waits-for-sub-buffer.seq"}},
      {"--backend vulkan --device llvmpipe", {"vulkan/fence-resubmit.seq", "vulkan/cmd-copy.seq"}},
  };
  for (const Case& c : cases) {
    testing::ScratchDir dir;
    std::string files;
    for (const std::string& f : c.files)
      files += " " + root + "/corpus/models/" + f;
    const testing::CommandResult r =
        testing::gpufuzz("sweep " + c.backend + " --out " + (dir.path() / "out").string() + files);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("0 did not pass"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find(" 0 calls failed"), std::string::npos) << r.output;
  }
}

// --device-memory and `# device-memory:` leave the run that much memory: an allocation that does
// not fit fails for real, its operation ends with `fail ... real`, and the run goes on.
TEST(DeviceMemory, AnAllocationRunsOutForRealAndTheRunGoesOn) {
  testing::ScratchDir dir;
  const std::string text =
      "# device-memory: 300000\ncreate r0\ncreate r1\ncreate r2\ndraw r2\ndestroy r0\n"
      "create r3\nread_back r3\n";
  const testing::CommandResult bounded = runMarked(dir, text);
  EXPECT_EQ(bounded.status, 0) << bounded.output;
  EXPECT_NE(bounded.output.find("3  create r2 ... failed for real: ctx_create: SIM_OUT_OF_MEMORY"),
            std::string::npos)
      << bounded.output;
  EXPECT_NE(bounded.output.find("4  draw r2 ... skipped"), std::string::npos) << bounded.output;
  EXPECT_NE(bounded.output.find("7  read_back r3 ... ok"), std::string::npos) << bounded.output;
  // The command line's value wins over the file's.
  const testing::CommandResult roomy = runMarked(dir, text, "--device-memory 100000000");
  EXPECT_EQ(roomy.status, 0) << roomy.output;
  EXPECT_EQ(roomy.output.find("for real"), std::string::npos) << roomy.output;
}

// Without a bound, a sequence that asks more device memory than the device holds gets the
// runtime's answer: an operation whose model declares `oom` fails for real, and is no finding.
TEST(DeviceMemory, PastTheDevicesSizeAnOperationDeclaringOomFailsForReal) {
  testing::ScratchDir dir;
  std::string text = "# model: device\nctx_create c0\n";
  for (int b = 0; b < 34; ++b)  // 68 GiB against sim's 64
    text += "buf_create c0 b" + std::to_string(b) + " bytes=2147483648\n";
  text += "buf_destroy b0\nctx_destroy c0\n";
  const testing::CommandResult r = runMarked(dir, text);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("35  buf_create c0 b33 bytes=2147483648 ... failed for real: buf_alloc: "
                          "SIM_OUT_OF_MEMORY"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("37  ctx_destroy c0 ... ok"), std::string::npos) << r.output;
}

// A call that ran out for real counts as `injected` for fault plans, as a marked one does: a plan
// can plant a runtime whose error path breaks under real exhaustion.
TEST(DeviceMemory, ARealExhaustionCountsAsInjectedForFaultPlans) {
  testing::ScratchDir dir;
  const fs::path plan = dir.path() / "broken.plan";
  writeFileAtomically(plan, "error at ctx_destroy when injected >= 1\n");
  const fs::path file = dir.path() / "exhausted.seq";
  writeFileAtomically(file, "create r0\ncreate r1\ncreate r2\ndestroy r1\n");
  const auto run = [&](const std::string& options) {
    return testing::runCommand((testing::binDir() / "gpufuzz-runner").string() +
                               " --backend sim --faults " + plan.string() + " " + options + " " +
                               file.string() + " 2>&1");
  };
  const testing::CommandResult bounded = run("--device-memory 300000");
  EXPECT_NE(bounded.output.find("failed for real"), std::string::npos) << bounded.output;
  EXPECT_NE(bounded.output.find("outcome: error"), std::string::npos) << bounded.output;
  const testing::CommandResult roomy = run("");
  EXPECT_NE(roomy.output.find("outcome: pass"), std::string::npos) << roomy.output;
}

TEST(DeviceMemory, BadInputIsExitTwoWithItsPlaceBeforeAnythingRuns) {
  testing::ScratchDir dir;
  const fs::path file = dir.path() / "one.seq";
  writeFileAtomically(file, "create r0\n");
  const fs::path zero = dir.path() / "zero.seq";
  writeFileAtomically(zero, "# device-memory: 0\ncreate r0\n");
  const fs::path word = dir.path() / "word.seq";
  writeFileAtomically(word, "# device-memory: lots\ncreate r0\n");
  const std::string out = " --out " + (dir.path() / "o").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"replay --backend sim --device-memory 0 " + file.string(), "--device-memory"},
      {"replay --backend sim --device-memory 1x " + file.string(), "--device-memory"},
      {"replay --backend sim " + zero.string(), "zero.seq:1:"},
      {"replay --backend sim " + word.string(), "word.seq:1:"},
      {"replay --backend opencl --device pocl --device-memory 1000000 " + file.string(),
       "backend opencl cannot bound"},
      {"sweep --backend vulkan --device-memory 1000000 " + file.string() + out,
       "backend vulkan cannot bound the memory of llvmpipe"},
      {"fuzz --backend opencl --device pocl --runs 1 --device-memory 1000000" + out,
       "backend opencl cannot bound"},
      {"fuzz --target \"python3 -c pass\" --runs 1 --device-memory 1000000" + out,
       "--device-memory"},
  };
  for (const auto& [args, says] : cases) {
    const testing::CommandResult r = testing::gpufuzz(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << args << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(dir.path() / "o")) << "nothing ran";
}

/// A campaign on sim under `plan` (one rule behind `injected` or `ctx_injected`): its findings.
struct Campaign {
  testing::ScratchDir dir;
  testing::CommandResult result;
  std::vector<fs::path> findings;
  Campaign(const std::string& plan, const std::string& options) {
    const fs::path file = dir.path() / "error-path.plan";
    writeFileAtomically(file, plan + "\n");
    const fs::path out = dir.path() / "findings";
    result = testing::gpufuzz(
        "fuzz --backend sim --quiet --no-explain --jobs 2 --deadline 1000 "
        "--confirmations 1 --ops all --seed 3 --runs 120 --faults " +
        file.string() + " " + options + " --out " + out.string());
    if (!fs::is_directory(out)) return;
    for (const auto& e : fs::directory_iterator(out)) {
      if (fs::exists(e.path() / "minimal.seq")) findings.push_back(e.path());
    }
  }
};

// Three shapes of a broken error path, each found with --inject, shrunk with its mark kept and
// replayed, and never found without --inject in the same budget.
TEST(InjectedCampaign, FindsEachErrorPathBugOnlyWithInject) {
  struct Shape {
    const char* plan;
    const char* cls;
  };
  for (const Shape& s : {Shape{"hang at ctx_destroy when ctx_injected >= 1", "hang"},
                         Shape{"crash at ctx_create when injected >= 1", "crash"},
                         Shape{"leak at buf_free when injected >= 1", "leak"}}) {
    SCOPED_TRACE(s.plan);
    const Campaign with(s.plan, "--inject all --inject-rate 50");
    EXPECT_EQ(with.result.status, 1) << with.result.output;
    ASSERT_EQ(with.findings.size(), 1U) << with.result.output;
    const std::string minimal = readFile(with.findings[0] / "minimal.seq");
    EXPECT_NE(minimal.find(" !"), std::string::npos) << "the mark is kept:\n" << minimal;
    EXPECT_NE(readFile(with.findings[0] / "cause").find(s.cls), std::string::npos);
    const testing::CommandResult replay =
        testing::gpufuzz("replay " + (with.findings[0] / "minimal.seq").string());
    EXPECT_EQ(replay.status, 0) << replay.output;
    const Campaign without(s.plan, "");
    EXPECT_EQ(without.result.status, 0) << without.result.output;
    EXPECT_TRUE(without.findings.empty()) << without.result.output;
  }
}

TEST(InjectedCampaign, BadInjectOptionsAreExitTwoBeforeAnythingRuns) {
  for (const char* options :
       {"--inject oops", "--inject oom,", "--inject-rate 0", "--inject-rate 101", "--inject"}) {
    const testing::CommandResult r = testing::gpufuzz(
        std::string("fuzz --backend sim --runs 1 --out /nonexistent/x ") + options);
    EXPECT_EQ(r.status, 2) << options << "\n" << r.output;
  }
  const testing::CommandResult none = testing::gpufuzz(
      "fuzz --backend sim --runs 1 --ops renderer --inject oom,lost,host-oom "
      "--out /nonexistent/x --model device");
  EXPECT_EQ(none.status, 2) << none.output;
  // OpenCL has no lost device: asked for by name it is refused, and `all` leaves it out.
  const testing::CommandResult lost = testing::gpufuzz(
      "fuzz --backend opencl --device pocl --runs 1 --inject lost --out /nonexistent/x");
  EXPECT_EQ(lost.status, 2) << lost.output;
  EXPECT_NE(lost.output.find("backend opencl cannot fail with lost"), std::string::npos)
      << lost.output;
  EXPECT_FALSE(injectedWords("all", "opencl", nullptr).has(FailWord::Lost));
  EXPECT_TRUE(injectedWords("all", "opencl", nullptr).has(FailWord::HostOom));
  EXPECT_TRUE(injectedWords("all", "sim", nullptr).has(FailWord::Lost));
}

// sweep fails each call that can fail in a run of its own: it finds an error path a plan broke,
// keeps the failing call's mark in the finding, and passes a file whose every failure is survived.
TEST(Sweep, FailsEachCallInTurnAndKeepsWhatDidNotPass) {
  testing::ScratchDir dir;
  const fs::path file = dir.path() / "two.seq";
  writeFileAtomically(file, "# faults: none\ncreate r0\ndraw r0\ncreate r1\nread_back r1\n");
  const fs::path out = dir.path() / "findings";
  const testing::CommandResult clean =
      testing::gpufuzz("sweep --backend sim --out " + out.string() + " " + file.string());
  EXPECT_EQ(clean.status, 0) << clean.output;
  // create makes 3 calls that can run out of device memory (a context, two buffers): each is
  // failed once, and the fourth run shows there is no fourth.
  for (const char* line : {"two.seq:1 create r0 !oom: pass", "two.seq:1 create r0 !oom@3: pass",
                           "two.seq:4 read_back r1 !lost: pass"})
    EXPECT_NE(clean.output.find(line), std::string::npos) << line << "\n" << clean.output;
  EXPECT_EQ(clean.output.find("create r0 !oom@4"), std::string::npos) << clean.output;

  const fs::path plan = dir.path() / "broken.plan";
  writeFileAtomically(plan, "leak at ctx_destroy when ctx_injected >= 1\n");
  const testing::CommandResult broken =
      testing::gpufuzz("sweep --backend sim --inject oom --confirmations 1 --faults " +
                       plan.string() + " --out " + out.string() + " " + file.string());
  EXPECT_EQ(broken.status, 1) << broken.output;
  std::vector<fs::path> findings;
  for (const auto& e : fs::directory_iterator(out)) {
    if (fs::exists(e.path() / "minimal.seq")) findings.push_back(e.path());
  }
  ASSERT_EQ(findings.size(), 1U) << broken.output;
  const std::string minimal = readFile(findings[0] / "minimal.seq");
  EXPECT_NE(minimal.find("create r0 !oom"), std::string::npos) << minimal;
  EXPECT_EQ(minimal.find("host-oom"), std::string::npos) << "only --inject's word:\n" << minimal;
}

TEST(Sweep, BadInputIsExitTwoBeforeAnythingRuns) {
  testing::ScratchDir dir;
  const fs::path file = dir.path() / "one.seq";
  writeFileAtomically(file, "create r0\n");
  const fs::path bad = dir.path() / "bad.seq";
  writeFileAtomically(bad, "create r0 !oops\n");
  for (const std::string& args :
       {"sweep --backend sim --inject oops " + file.string(),
        "sweep --backend sim --inject none " + file.string(), std::string("sweep --backend sim"),
        "sweep --backend sim " + file.string() + " " + bad.string(),
        "sweep --backend sim --threads 2 " + file.string()}) {
    const testing::CommandResult r =
        testing::gpufuzz(args + " --out " + (dir.path() / "o").string());
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(dir.path() / "o")) << "nothing ran";
}

}  // namespace
}  // namespace gpufuzz
