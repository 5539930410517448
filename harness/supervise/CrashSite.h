// CrashSite.h: where a crashed child died, as text the harness keeps with its other stacks. The
// project's runner writes its own frames from its signal handler (harness/protocol/CrashReport.h);
// they are symbolised here after it died, from the ELF symbol tables of the modules its memory map
// names (and file:line by addr2line when it is installed). A target of docs/target.md has no such
// handler: a confirmation run under a debugger (gdb, else cuda-gdb) takes its crashing thread's
// frames.
//
// The text opens with a line that says what took the frames ("crash frames by the runner's signal
// handler, SIGSEGV, process 1234"), then "Thread 1 (crashed):" and gdb-style frame lines, each
// ending with who owns the frame's module:
//   #0  0x00007f3a12345678 in cuMemPoolDestroy () from /usr/lib/libcuda.so.1 [runtime]
//   #1  0x000055d0c0ffee00 in gpufuzz::CudaDevice::release () at CudaDevice.cpp:88 [program]
// Search/Cause.h buckets crashes by their top frames (crashState), as crash reports are in the
// field: the crashing thread's top three, after the signal-handling, abort and system frames.
//
// A stuck child's stacks come in the same shape. A target answers the stacks signal through its
// client library, in its own language: a C++ target with native frames as the runner does, a
// Python target with faulthandler's text, turned here into frame lines of Python functions:
//   Thread 2 (Python thread 0x00007f3a5b9ff6c0) in a handler:
//   #0  0x0000000000000000 in wait () at /usr/lib/python3.11/threading.py:320 [system]
//   #1  0x0000000000000000 in stuck_in_submit () at /src/target.py:20 [program]
//   #2  0x0000000000000000 in _dispatch () at /src/gpufuzz_target.py:722 [system]
// " in a handler" marks a thread that runs the target's code for its client library.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "harness/supervise/ChildProcess.h"

namespace gpufuzz {

/// Whose code a frame runs: the program's own (the runner, or the target), the GPU runtime's
/// (libcuda, libOpenCL, libvulkan, a driver's libraries), the system's (libc, libstdc++, the
/// loader), or another library's.
enum class FrameOwner { Program, Runtime, System, Library };
std::string_view frameOwnerName(FrameOwner owner);
/// By the module's file name; `program` is the path of the program itself.
FrameOwner frameOwner(const std::string& module, const std::string& program);

/// A frame as the crash text has it.
struct CrashFrame {
  std::string function;  // without its parameters; empty when unknown
  std::string module;    // its file; empty when the debugger did not say
  FrameOwner owner = FrameOwner::Library;
};

/// How a crash text from the runner's own handler opens: such frames come with every crashed run,
/// where a target's need a debugger's run of their own.
inline constexpr std::string_view kRunnerCrashFramesBy =
    "crash frames by the runner's signal handler";
/// How the runner's own stacks of a live child open.
inline constexpr std::string_view kRunnerStacksBy = "stacks by the runner's signal handler";
/// How a target's own native stacks open: its C++ client's handler.
inline constexpr std::string_view kTargetStacksBy = "stacks by the target's signal handler";
/// How a Python target's own stacks open.
inline constexpr std::string_view kPythonStacksBy = "stacks by the target's Python faulthandler";
/// What a thread heading has before its colon when the thread runs a target's handler.
inline constexpr std::string_view kInHandler = " in a handler";

/// Where a runner child writes its frames if it crashes, and where a runner or a target writes
/// every thread's when asked (CrashReport.h): names of their own in the temporary folder, given in
/// the child's environment; the files are removed with this object.
class CrashFile {
 public:
  /// `runner` false: a target's, with the stacks file alone. A debugger's run takes a target's
  /// crash frames.
  explicit CrashFile(bool runner);
  ~CrashFile();
  CrashFile(const CrashFile&) = delete;
  CrashFile& operator=(const CrashFile&) = delete;
  /// The crash file's; empty for a target's.
  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& stacksPath() const { return stacksPath_; }
  /// The crashed child's frames, symbolised (crashTextFromFile); empty without them.
  std::string text(long pid) const;
  /// Every thread's frames of the live child that named itself in the stacks file, by its own
  /// handler (stacksTextFromFile, or stacksTextFromFaulthandler for a Python target); empty when
  /// none did or no record came within `wait`.
  std::string askStacks(std::chrono::milliseconds wait) const;

 private:
  std::string askFaulthandler(long pid, std::chrono::milliseconds wait) const;

  bool runner_;
  std::filesystem::path path_;
  std::filesystem::path stacksPath_;
  mutable bool asked_ = false;  // askStacks was called: the child may have written a record
};

/// The crash text from a runner's crash file (symbolised); empty when there is no file or it is
/// not one (a crash before the handler was installed).
std::string crashTextFromFile(const std::filesystem::path& file, long pid);
/// The stacks text from a native stacks record, symbolised: `by` (kRunnerStacksBy or
/// kTargetStacksBy), ", process N", then each thread that answered, by thread id ("Thread K (LWP
/// TID "NAME"):", with kInHandler before the colon when the record says `handler`), with its
/// frames as a crash text has them. Empty when it is none.
std::string stacksTextFromFile(const std::filesystem::path& file, long pid,
                               std::string_view by = kRunnerStacksBy);
/// The stacks text from a Python target's faulthandler record (CrashReport.h; the end byte may
/// be there or not): kPythonStacksBy, ", process N", then each Python thread, the oldest first,
/// as "Thread K (Python thread 0xID):", ", took the signal" for faulthandler's current thread.
/// Each frame line is "#K  0x0000000000000000 in FUNCTION () at FILE:LINE [OWNER]", innermost
/// first, FUNCTION being the code object's name. The owner is the program's for the target's
/// own files, the runtime's for a GPU runtime's package (cupy, pyopencl ...), a library's for
/// another installed package, and the system's for the standard library and the client library
/// (gpufuzz_target.py). A thread whose frames hold the client's under the target's own is
/// marked kInHandler. Empty when the record holds no thread.
std::string stacksTextFromFaulthandler(std::string_view record, long pid);

/// The command that runs `command` under `debugger` (gdb or cuda-gdb) to its crash and prints the
/// crashing thread's frames. Descriptors and environment pass through to the program.
ChildCommand crashDebuggerCommand(const std::string& debugger, const ChildCommand& command);
/// The crash text from such a debugger's output; empty when the program did not stop on a
/// signal there.
std::string crashTextFromDebugger(const std::string& debuggerName, const std::string& output);

/// Whether `stacks` is a crash text (above), not a stuck child's stacks.
bool isCrashText(const std::string& stacks);
/// The crashing thread's frames, innermost first.
std::vector<CrashFrame> crashFrames(const std::string& stacks);
/// The stuck thread's frames of a stuck child's stacks (the runner's own, a target's own, or a
/// debugger's: StackCapture.h), innermost first. Of the threads that run the program's code, the
/// first inside a runtime's call, else the first. Those are the threads a target's client marks
/// as in a handler; else those that run a gpufuzz:: function; else, in a target's own stacks,
/// those with a frame of the program's. A Python target's stuck frames leave out the system's,
/// the standard library's and the client library's, so that the top ones are the target's own.
std::vector<CrashFrame> stuckFrames(const std::string& stacks);
/// Where a failure is, by one function: the runtime's top frame when it died or is stuck in the
/// runtime, else the program's; a spin and a crash in one runtime function share it. Empty
/// without frames.
std::string frameSite(const std::string& stacks);
/// The crash state: the names of the top `count` frames of the crashing thread, after the
/// signal-handling and abort frames and the system's frames above a caller of another owner (as
/// ClusterFuzz skips memcpy and free); a frame without a name is "in MODULE" (its file name), and
/// a run of such frames in one module counts once. Empty when `stacks` is no crash text.
std::vector<std::string> crashState(const std::string& stacks, std::size_t count = 3);
/// The same of the stuck thread (stuckFrames): a target that sleeps or waits in libc is stuck
/// in its own function that called it.
std::vector<std::string> stuckState(const std::string& stacks, std::size_t count = 3);
/// The state of `frames`, innermost first, as crashState takes it.
std::vector<std::string> frameState(const std::vector<CrashFrame>& frames, std::size_t count);
/// The first frame of the runtime's and the first of the program's own, as crashState names
/// them; empty when none.
std::string runtimeTopFrame(const std::vector<CrashFrame>& frames);
std::string programTopFrame(const std::vector<CrashFrame>& frames);
/// The runtime's entry point a crash died under or a stuck thread waits under: the outermost
/// named frame of the first run of the runtime's frames, the call the program made
/// (cuMemPoolDestroy). Empty when the failure is not in a runtime or that frame has no name.
/// Its internal frames may differ: the driver crashes in one and spins in another.
std::string runtimeEntry(const std::string& stacks);

}  // namespace gpufuzz
