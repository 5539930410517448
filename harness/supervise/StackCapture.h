// StackCapture.h: every thread's stack of a stuck child that does not write its own (the project's
// runner does: CrashFile::askStacks), taken by a debugger attached to it in
// batch mode: gdb when it is on PATH, else NVIDIA's cuda-gdb (gdb with CUDA's commands, what GPU
// machines without gdb have; often not on PATH: findCudaTool). Attaching needs ptrace rights
// over the child: root, or an ancestor under Yama ptrace_scope 1 (ChildProcess lets the
// harness's debugger in).
//
// The text opens with a line naming the debugger that took it ("stacks by cuda-gdb
// (/usr/local/cuda/bin/cuda-gdb), process 1234"), then what the debugger printed (`thread apply
// all bt`: "Thread N (...):" lines, each followed by its "#K" frames), bounded in size and time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

#include "harness/supervise/ChildProcess.h"

namespace gpufuzz {

struct StackDebugger {
  std::string name;  // "gdb", "cuda-gdb"
  std::string path;
  /// How long it may take: cuda-gdb also sets up CUDA's debugger API on attaching.
  std::chrono::milliseconds timeout{0};
};

/// gdb on PATH, else cuda-gdb (findCudaTool); nothing when neither is there. Looked up at each
/// call, so that PATH as it is then decides.
std::optional<StackDebugger> findStackDebugger();

/// The batch command with which `debugger` attaches to `pid`, prints every thread's backtrace
/// and detaches: no init files, no debuginfod downloads; cuda-gdb ignores failed CUDA calls
/// rather than stopping on them.
ChildCommand stackCommand(const StackDebugger& debugger, pid_t pid);

/// Every thread's stack of `pid` (see above); empty when there is no debugger. A debugger that
/// cannot start or runs out of time says so in the text.
std::string captureStacks(pid_t pid);

}  // namespace gpufuzz
