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

/// Where a runner child writes its frames if it crashes, and every thread's when asked
/// (CrashReport.h): names of their own in the temporary folder, given in the child's environment;
/// the files are removed with this object.
class CrashFile {
 public:
  /// `wanted` false: no file (a target, which has no handler).
  explicit CrashFile(bool wanted);
  ~CrashFile();
  CrashFile(const CrashFile&) = delete;
  CrashFile& operator=(const CrashFile&) = delete;
  /// Empty when not wanted.
  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& stacksPath() const { return stacksPath_; }
  /// The crashed child's frames, symbolised (crashTextFromFile); empty without them.
  std::string text(long pid) const;
  /// Every thread's frames of the live runner that named itself in the stacks file, by its own
  /// handler (stacksTextFromFile); empty when none did or no record came within `wait`.
  std::string askStacks(std::chrono::milliseconds wait) const;

 private:
  std::filesystem::path path_;
  std::filesystem::path stacksPath_;
};

/// The crash text from a runner's crash file (symbolised); empty when there is no file or it is
/// not one (a crash before the handler was installed).
std::string crashTextFromFile(const std::filesystem::path& file, long pid);
/// The stacks text from a runner's stacks record, symbolised: "stacks by the runner's signal
/// handler, process N", then each thread that answered, by thread id ("Thread K (LWP TID
/// "NAME"):") with its frames as a crash text has them. Empty when it is none.
std::string stacksTextFromFile(const std::filesystem::path& file, long pid);

/// The command that runs `command` under `debugger` (gdb or cuda-gdb) to its crash and prints the
/// crashing thread's frames. Descriptors and environment pass through to the program.
ChildCommand crashDebuggerCommand(const std::string& debugger, const ChildCommand& command);
/// The crash text from such a debugger's output; empty when the program did not stop on a
/// signal there.
std::string crashTextFromDebugger(const std::string& debuggerName, const std::string& output);

/// How a crash text from the runner's own handler opens: such frames come with every crashed run,
/// where a target's need a debugger's run of their own.
inline constexpr std::string_view kRunnerCrashFramesBy =
    "crash frames by the runner's signal handler";
/// How the runner's own stacks of a live child open.
inline constexpr std::string_view kRunnerStacksBy = "stacks by the runner's signal handler";
/// Whether `stacks` is a crash text (above), not a stuck child's stacks.
bool isCrashText(const std::string& stacks);
/// The crashing thread's frames, innermost first.
std::vector<CrashFrame> crashFrames(const std::string& stacks);
/// The stuck thread's frames of a stuck child's stacks (the runner's own, or a debugger's:
/// StackCapture.h), innermost first: of the threads that run the program's code (a gpufuzz::
/// function), the first inside a runtime's call, else the first.
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
