// CrashHandler.h: the runner's fatal-signal handler (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT).
// On an alternate stack, it writes the frames where the process died to the file its supervisor
// named (harness/protocol/CrashReport.h), then dies by the same signal: the exit status stays a
// crash. Everything it does after the signal is async-signal-safe: open, write, read, close, and
// glibc's backtrace(), whose unwinder is loaded at installation so that it allocates nothing then.
// Its stacks handler writes every thread's frames when the supervisor asks, by the same means: it
// is the C++ client library's (clients/cpp/gpufuzz/stacks.hpp), which every C++ target has too.
#pragma once

namespace gpufuzz {

/// Installs the handler for the calling process when kCrashFileVariable is set; does nothing
/// otherwise. Called once per run, after a fork server's fork has reset every signal.
void installCrashHandler();

/// Installs the handler of kStacksSignal when kStacksFileVariable is set, then writes "pid N" to
/// that file to say so: every thread that takes the signal writes its own frames to the record
/// (harness/protocol/CrashReport.h). Used in place of a debugger, which may crash or arrive late.
/// Called as installCrashHandler is.
void installStacksHandler();

}  // namespace gpufuzz
