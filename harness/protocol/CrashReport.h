// CrashReport.h: how the project's runner tells its supervisor where it died. The supervisor names
// a file in the child's environment (kCrashFileVariable); a runner killed by a fatal signal writes
// it from its signal handler, then dies by that signal, so its exit status stays a crash. Nothing
// is written by a run that does not crash.
//
// The file is text, one record a line, written async-signal-safely:
//   gpufuzz crash 1
//   signal N          the signal's number
//   pc 0xADDR         where it died (the signal context's program counter), when known
//   exe PATH          the runner's own executable
//   frame 0xADDR      each return address the unwinder found, innermost first (the handler's
//                     own frames come before the one at `pc`)
//   maps              then /proc/self/maps as it was, to the end of the file: which module
//                     holds each address, for symbolising after the process is gone
//
// Stacks on request. The supervisor names a second file (kStacksFileVariable); a runner that
// answers writes "pid N" there, its own process id, when its handler is in place. For every
// thread's stack of a stuck or late runner, the supervisor sends kStacksSignal to that process. The
// thread that takes it signals each other thread that does not block the signal, waits for them a
// while, and renames its record to the file's name with ".taken" added. That record is text, one
// record a line:
//   gpufuzz stacks 1
//   exe PATH
//   thread TID NAME   then that thread's `pc` and `frame` lines, as in a crash file
//   maps              then /proc/self/maps, to the end of the file
// Each thread unwinds its own stack inside the handler: no debugger attaches. On the GPU machine
// cuda-gdb 13.0 crashed attaching to a spinning runner, and the spin was left without frames.
#pragma once

#include <csignal>

namespace gpufuzz {

/// The child's environment variable that names its crash file.
inline constexpr const char* kCrashFileVariable = "GPUFUZZ_CRASH_FILE";
/// The first line of a crash file.
inline constexpr const char* kCrashFileHeader = "gpufuzz crash 1";

/// The child's environment variable that names its stacks file.
inline constexpr const char* kStacksFileVariable = "GPUFUZZ_STACKS_FILE";
/// The first line of a stacks record.
inline constexpr const char* kStacksFileHeader = "gpufuzz stacks 1";
/// Where a stacks record is written, after the stacks file's name, until it is complete.
inline constexpr const char* kStacksPartSuffix = ".part";
/// What a stacks record is renamed to, after the stacks file's name.
inline constexpr const char* kStacksTakenSuffix = ".taken";
/// The signal that asks for them. Its default action is to ignore it: a process without the
/// handler goes on as it was.
inline constexpr int kStacksSignal = SIGURG;

}  // namespace gpufuzz
