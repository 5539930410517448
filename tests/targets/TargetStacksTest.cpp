// TargetStacksTest.cpp: a stuck target's stacks in its own language. A faulthandler record turns
// into frame lines of Python functions; a Python target and a C++ target stuck in an operation,
// started afresh and forked, give stacks of their own whose stuck thread is the one inside the
// operation, its top frame the target's function; a late Python target gives them and goes on.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/search/Cause.h"
#include "harness/supervise/CrashSite.h"
#include "harness/supervise/ForkServer.h"
#include "harness/supervise/Supervisor.h"
#include "tests/ProjectPaths.h"

namespace gpufuzz {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

/// Python 3.11 faulthandler's answer for three threads, the newest first: a lane of the client
/// stuck in the target's code, a lane waiting for its turn, and the main thread, which took the
/// signal, waiting for the lanes. Then the byte that ends the answer.
const std::string kRecord =
    "Thread 0x00007f5e8a1b2700 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 622 in wait\n"
    "  File \"/src/my_target.py\", line 20 in stuck_in_submit\n"
    "  File \"/src/my_target.py\", line 31 in draw\n"
    "  File \"/opt/gpufuzz/clients/python/gpufuzz_target.py\", line 722 in _dispatch\n"
    "  File \"/opt/gpufuzz/clients/python/gpufuzz_target.py\", line 815 in _lane\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 975 in run\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 1038 in _bootstrap_inner\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 995 in _bootstrap\n"
    "\n"
    "Thread 0x00007f5e8a9b3700 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
    "  File \"/opt/gpufuzz/clients/python/gpufuzz_target.py\", line 806 in _lane\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 975 in run\n"
    "\n"
    "Current thread 0x00007f5e8b2c4740 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 1112 in join\n"
    "  File \"/opt/gpufuzz/clients/python/gpufuzz_target.py\", line 792 in run\n"
    "  File \"/opt/gpufuzz/clients/python/gpufuzz_target.py\", line 868 in run_sequence\n"
    "  File \"/src/my_target.py\", line 40 in <module>\n"
    "\x17";

TEST(TargetStacks, AFaulthandlerRecordBecomesFrameLinesOfPythonFunctions) {
  const std::string text = stacksTextFromFaulthandler(kRecord, 42);
  EXPECT_EQ(text.rfind(std::string(kPythonStacksBy) + ", process 42\n", 0), 0U) << text;
  // The oldest thread first; the one that took the signal and the one in a handler say so.
  EXPECT_NE(text.find("Thread 1 (Python thread 0x00007f5e8b2c4740, took the signal):\n"
                      "#0  0x0000000000000000 in join () at /usr/lib/python3.11/threading.py:1112 "
                      "[system]\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Thread 2 (Python thread 0x00007f5e8a9b3700):\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Thread 3 (Python thread 0x00007f5e8a1b2700) in a handler:\n"
                      "#0  0x0000000000000000 in wait () at /usr/lib/python3.11/threading.py:320 "
                      "[system]\n"
                      "#1  0x0000000000000000 in wait () at /usr/lib/python3.11/threading.py:622 "
                      "[system]\n"
                      "#2  0x0000000000000000 in stuck_in_submit () at /src/my_target.py:20 "
                      "[program]\n"
                      "#3  0x0000000000000000 in draw () at /src/my_target.py:31 [program]\n"
                      "#4  0x0000000000000000 in _dispatch () at "
                      "/opt/gpufuzz/clients/python/gpufuzz_target.py:722 [system]\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\x17'), 0) << text;
  // The stuck thread is the one in a handler; its top frames are the target's own.
  std::vector<std::string> names;
  for (const CrashFrame& f : stuckFrames(text))
    names.push_back(f.function);
  EXPECT_EQ(names, (std::vector<std::string>{"stuck_in_submit", "draw"})) << text;
  EXPECT_EQ(topFrames(text, 4), (std::vector<std::string>{"stuck_in_submit", "draw"}));
  EXPECT_EQ(frameSite(text), "stuck_in_submit");
}

TEST(TargetStacks, APythonFramesOwnerIsItsFilesOne) {
  const std::string text = stacksTextFromFaulthandler(
      "Current thread 0x1 (most recent call first):\n"
      "  File \"/venv/lib/python3.11/site-packages/cupy/cuda/stream.py\", line 9 in synchronize\n"
      "  File \"/usr/lib/python3/dist-packages/numpy/core/numeric.py\", line 2 in zeros\n"
      "  File \"<frozen importlib._bootstrap>\", line 1 in _call_with_frames_removed\n"
      "  File \"/home/me/.pyenv/versions/3.11.2/lib/python3.11/queue.py\", line 171 in get\n"
      "  File ???, line ??? in ???\n"
      "  File \"/src/target.py\", line 5 in sync\n",
      7);
  std::vector<std::string> lines;
  for (std::size_t at = 0; (at = text.find('#', at)) != std::string::npos; ++at)
    lines.push_back(text.substr(at, text.find('\n', at) - at));
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "#0  0x0000000000000000 in synchronize () at "
                       "/venv/lib/python3.11/site-packages/cupy/cuda/stream.py:9 [runtime]",
                       "#1  0x0000000000000000 in zeros () at "
                       "/usr/lib/python3/dist-packages/numpy/core/numeric.py:2 [library]",
                       "#2  0x0000000000000000 in _call_with_frames_removed () at <frozen "
                       "importlib._bootstrap>:1 [system]",
                       "#3  0x0000000000000000 in get () at "
                       "/home/me/.pyenv/versions/3.11.2/lib/python3.11/queue.py:171 [system]",
                       "#4  0x0000000000000000 in ?? () [program]",
                       "#5  0x0000000000000000 in sync () at /src/target.py:5 [program]"}))
      << text;
  // No thread in a handler: of those with the program's frames, the first; the runtime's call
  // is where it waits.
  EXPECT_EQ(runtimeEntry(text), "synchronize");
}

TEST(TargetStacks, AnAnswerCutShortKeepsItsWholeLinesAndNoneIsNothing) {
  const std::string cut = kRecord.substr(0, kRecord.find("line 622"));
  const std::string text = stacksTextFromFaulthandler(cut, 3);
  EXPECT_NE(text.find("in wait () at /usr/lib/python3.11/threading.py:320"), std::string::npos)
      << text;
  EXPECT_EQ(text.find(":622"), std::string::npos) << text;
  EXPECT_EQ(stacksTextFromFaulthandler("", 3), "");
  EXPECT_EQ(stacksTextFromFaulthandler("\x17", 3), "");
}

const std::string kStuckTarget = (testing::binDir() / "stuck-target").string();
const std::string kPythonTarget =
    (testing::sourceDir() / "tests" / "targets" / "stuck_target.py").string();

class StuckTarget : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpufuzz-target-stacks-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    ForkServers::stopIdle();
    fs::remove_all(dir_);
  }

  /// `body` as a sequence file of the built-in model.
  std::string sequence(const std::string& body) {
    const fs::path path = dir_ / ("s" + std::to_string(files_++) + ".seq");
    std::ofstream(path) << "# gpufuzz sequence\n# policy: shipped\n" << body;
    return path.string();
  }

  static SupervisionLimits limits(bool forkServer, std::vector<std::string> ops,
                                  std::vector<std::vector<std::size_t>> waits = {}) {
    SupervisionLimits l;
    l.target = true;
    l.forkServer = forkServer;
    l.progressDeadline = 500ms;
    l.startDeadline = 10s;
    l.captureStacks = true;
    l.expectedOps = std::move(ops);
    l.expectedWaits = std::move(waits);
    return l;
  }

  /// A stuck run of `command` on `body`: its stacks, or why there are none.
  Supervised stuck(ChildCommand command, const std::string& body, const SupervisionLimits& l) {
    command.serverArgs = command.args.size();  // a fork server is the command without the file
    command.args.push_back(sequence(body));
    return supervise(command, l);
  }

  fs::path dir_;
  int files_ = 0;
};

/// How many thread headings of `stacks` say the thread runs a handler.
std::size_t inHandler(const std::string& stacks) {
  std::size_t n = 0;
  for (std::size_t at = 0;
       (at = stacks.find(std::string(kInHandler) + ":\n", at)) != std::string::npos; ++at)
    ++n;
  return n;
}

// gdb sees the interpreter's C frames of a Python target: its own answer names its functions,
// whether the stuck call waits, spins, or holds the GIL in C so that no Python code runs.
TEST_F(StuckTarget, APythonTargetStuckInAnOperationNamesItsFunctionFirst) {
  for (const bool forkServer : {false, true}) {
    for (const std::string how : {"wait", "spin", "gil"}) {
      const Supervised s = stuck(ChildCommand{GPUFUZZ_TEST_PYTHON, {kPythonTarget, how}},
                                 "create r0\ndraw r0\n", limits(forkServer, {"create", "draw"}));
      const std::string what = how + (forkServer ? ", forked" : "");
      ASSERT_TRUE(s.stuck) << what << ": " << s.outputTail;
      EXPECT_EQ(s.stacks.rfind(kPythonStacksBy, 0), 0U) << what << ": " << s.stacks;
      const std::vector<std::string> top = topFrames(s.stacks, 4);
      ASSERT_FALSE(top.empty()) << what << ": " << s.stacks;
      EXPECT_EQ(top.front(), "stuck_in_submit") << what << ": " << s.stacks;
      EXPECT_EQ(top.at(1), "run") << what << ": "
                                  << s.stacks;  // the target's run(), not the client's
      EXPECT_EQ(inHandler(s.stacks), 1U) << what << ": " << s.stacks;
    }
  }
}

TEST_F(StuckTarget, AThreadedPythonTargetsStuckThreadIsTheOneInTheOperation) {
  const Supervised s =
      stuck(ChildCommand{GPUFUZZ_TEST_PYTHON, {kPythonTarget, "wait"}},
            "# threads: 3\n@0 create r0\n@1 create r1\n@2 create r2\n@1 draw r1\n@2 sync r2\n",
            limits(false, {"create", "create", "create", "draw", "sync"}, {{}, {}, {}, {1}, {2}}));
  ASSERT_TRUE(s.stuck) << s.outputTail;
  EXPECT_EQ(inHandler(s.stacks), 1U) << s.stacks;
  EXPECT_EQ(topFrames(s.stacks, 1), std::vector<std::string>{"stuck_in_submit"}) << s.stacks;
}

// A late operation's stacks are taken and the run goes on: the signal interrupts nothing that
// Python does not resume. The next operation's stacks are a record of their own.
TEST_F(StuckTarget, ALatePythonTargetGivesItsStacksAndGoesOn) {
  SupervisionLimits l = limits(false, {"create", "draw", "draw"});
  l.progressDeadline = 1500ms;
  l.lateDeadline = 150ms;
  const Supervised s = stuck(ChildCommand{GPUFUZZ_TEST_PYTHON, {kPythonTarget, "late"}},
                             "create r0\ndraw r0\ndraw r0\n", l);
  ASSERT_TRUE(s.stuck) << s.outputTail;
  EXPECT_EQ(s.stuckOp ? s.stuckOp->at.ordinal : 0U, 3U) << s.outputTail;
  EXPECT_EQ(s.lateStacks.rfind(kPythonStacksBy, 0), 0U) << s.lateStacks;
  EXPECT_EQ(topFrames(s.lateStacks, 1), std::vector<std::string>{"slow_submit"}) << s.lateStacks;
  EXPECT_EQ(topFrames(s.stacks, 1), std::vector<std::string>{"stuck_in_submit"}) << s.stacks;
  EXPECT_EQ(s.stacks.find("slow_submit"), std::string::npos) << s.stacks;
}

TEST_F(StuckTarget, ACppTargetStuckInAnOperationNamesItsFunction) {
  for (const bool forkServer : {false, true}) {
    for (const std::string how : {"spin", "hang"}) {
      const Supervised s = stuck(ChildCommand{kStuckTarget, {how}}, "create r0\ndraw r0\n",
                                 limits(forkServer, {"create", "draw"}));
      const std::string what = how + (forkServer ? ", forked" : "");
      ASSERT_TRUE(s.stuck) << what << ": " << s.outputTail;
      EXPECT_EQ(s.stacks.rfind(kTargetStacksBy, 0), 0U) << what << ": " << s.stacks;
      EXPECT_EQ(inHandler(s.stacks), 1U) << what << ": " << s.stacks;
      const std::vector<CrashFrame> frames = stuckFrames(s.stacks);
      EXPECT_EQ(programTopFrame(frames), "stuck_in_submit") << what << ": " << s.stacks;
      // A spin is stopped inside the function: it is the top frame.
      if (how == "spin") {
        EXPECT_EQ(topFrames(s.stacks, 1), std::vector<std::string>{"stuck_in_submit"}) << s.stacks;
      }
      EXPECT_EQ(s.stacks.find("onStacksSignal"), std::string::npos) << s.stacks;
    }
  }
}

TEST_F(StuckTarget, AThreadedCppTargetsStuckThreadIsTheOneInTheOperation) {
  const Supervised s =
      stuck(ChildCommand{kStuckTarget, {"spin"}},
            "# threads: 3\n@0 create r0\n@1 create r1\n@2 create r2\n@1 draw r1\n@2 sync r2\n",
            limits(false, {"create", "create", "create", "draw", "sync"}, {{}, {}, {}, {1}, {2}}));
  ASSERT_TRUE(s.stuck) << s.outputTail;
  EXPECT_EQ(inHandler(s.stacks), 1U) << s.stacks;
  EXPECT_EQ(topFrames(s.stacks, 1), std::vector<std::string>{"stuck_in_submit"}) << s.stacks;
}

}  // namespace
}  // namespace gpufuzz
