// CrashHandler.h: the runner's fatal-signal handler (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT).
// On an alternate stack, it writes the frames where the process died to the file its supervisor
// named (harness/protocol/CrashReport.h), then dies by the same signal: the exit status stays a
// crash. Everything it does after the signal is async-signal-safe: open, write, read, close, and
// glibc's backtrace(), whose unwinder is loaded at installation so that it allocates nothing then.
#pragma once

namespace gpufuzz {

/// Installs the handler for the calling process when kCrashFileVariable is set; does nothing
/// otherwise. Called once per run, after a fork server's fork has reset every signal.
void installCrashHandler();

}  // namespace gpufuzz
