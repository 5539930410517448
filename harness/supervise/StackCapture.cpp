// StackCapture.cpp: a stuck child's stacks by gdb or cuda-gdb.
#include "harness/supervise/StackCapture.h"

#include "harness/base/OutsideText.h"
#include "harness/supervise/CudaTools.h"

namespace gpufuzz {

namespace {

using namespace std::chrono_literals;

constexpr auto kGdbTimeout = 10s;
constexpr auto kCudaGdbTimeout = 30s;
constexpr std::size_t kStackLimit = 256 * 1024;

}  // namespace

std::optional<StackDebugger> findStackDebugger() {
  if (std::optional<std::string> gdb = findOnPath("gdb")) {
    return StackDebugger{"gdb", *gdb, kGdbTimeout};
  }
  if (std::optional<std::string> cudaGdb = findCudaTool("cuda-gdb")) {
    return StackDebugger{"cuda-gdb", *cudaGdb, kCudaGdbTimeout};
  }
  return std::nullopt;
}

ChildCommand stackCommand(const StackDebugger& debugger, pid_t pid) {
  ChildCommand command{debugger.path, {"-batch", "-nx", "-iex", "set debuginfod enabled off"}};
  if (debugger.name == "cuda-gdb") {
    command.args.insert(command.args.end(), {"-iex", "set cuda api_failures ignore"});
  }
  command.args.insert(command.args.end(),
                      {"-p", std::to_string(pid), "-ex", "thread apply all bt"});
  return command;
}

std::string captureStacks(pid_t pid) {
  const std::optional<StackDebugger> debugger = findStackDebugger();
  if (!debugger) return {};
  std::string text = "stacks by " + debugger->name + " (" + debugger->path + "), process " +
                     std::to_string(pid) + "\n";
  try {
    CapturedRun run = runCaptured(stackCommand(*debugger, pid), debugger->timeout, kStackLimit);
    text += run.output;
    if (run.timedOut) {
      text += "\n(" + debugger->name + " timed out after " +
              std::to_string(
                  std::chrono::duration_cast<std::chrono::seconds>(debugger->timeout).count()) +
              " s)\n";
    }
  } catch (const ChildStartError& e) {
    text += "(cannot run " + debugger->name + ": " + e.what() + ")\n";
  }
  return outsideText(text);
}

}  // namespace gpufuzz
