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
// Stacks on request. The supervisor names a second file (kStacksFileVariable), to the runner and
// to a target alike. A process that answers writes "pid N" there, its own process id, when its
// handler is in place. For every thread's stack of a stuck or late child, the supervisor sends
// kStacksSignal to that process. A native answer, the runner's or a C++ target's, is the record
// of clients/cpp/gpufuzz/stacks.hpp: the thread that takes the signal has every other thread add
// its frames, and renames the record to the file's name with ".taken" added. That record is text:
//   gpufuzz stacks 1
//   exe PATH
//   thread TID NAME   then that thread's `handler`, `pc` and `frame` lines, as in a crash file
//   maps              then /proc/self/maps, to the end of the file
// `handler` says the thread runs the target's code for its client library, so it is the stuck one.
// Each thread unwinds its own stack inside the handler: no debugger attaches. On the GPU machine
// cuda-gdb 13.0 crashed attaching to a spinning runner, and the spin was left without frames.
//
// A Python target writes "pid N faulthandler" instead (clients/python/gpufuzz_target.py). Its
// answer is what Python's faulthandler writes for every thread, appended to the file's name with
// ".part" added, then one byte, kStacksFaulthandlerEnd. Python's own signal handler writes that
// byte, chained after the dump, through its wakeup descriptor: no Python code runs, so a thread
// stuck in a C call that holds the GIL still gets its frames. The target keeps that file open, so
// the supervisor empties it before each signal rather than removing it.
#pragma once

#include <string_view>

#include "gpufuzz/stacks.hpp"

namespace gpufuzz {

/// The child's environment variable that names its crash file.
inline constexpr const char* kCrashFileVariable = "GPUFUZZ_CRASH_FILE";
/// The first line of a crash file.
inline constexpr const char* kCrashFileHeader = "gpufuzz crash 1";

/// The stacks file, its record and its signal: the C++ client's names (gpufuzz/stacks.hpp).
using target::kStacksFileHeader;
using target::kStacksFileVariable;
using target::kStacksPartSuffix;
using target::kStacksSignal;
using target::kStacksTakenSuffix;

/// The word after "pid N" in the stacks file of a target whose answer is Python's faulthandler.
inline constexpr std::string_view kStacksFaulthandler = "faulthandler";
/// The byte that ends a faulthandler answer: the signal's number, which Python's wakeup
/// descriptor writes.
inline constexpr char kStacksFaulthandlerEnd = static_cast<char>(kStacksSignal);

}  // namespace gpufuzz
