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
#pragma once

namespace gpufuzz {

/// The child's environment variable that names its crash file.
inline constexpr const char* kCrashFileVariable = "GPUFUZZ_CRASH_FILE";
/// The first line of a crash file.
inline constexpr const char* kCrashFileHeader = "gpufuzz crash 1";

}  // namespace gpufuzz
