// SupervisedChild.h: what a supervised child becomes before it runs, the same whether it is
// started afresh (ChildProcess, between fork and exec) or forked by a fork server
// (ForkServerProtocol.h). Async-signal-safe system calls only: the first case runs in a copy of
// one thread of a multithreaded process.
#pragma once

#include <sys/types.h>

namespace gpufuzz {

/// The descriptor a supervised child writes its progress events to (--events-fd).
inline constexpr int kChildEventsFd = 3;

/// Leads a new process group, is killed (SIGKILL) when `parent` dies (exits with status 127 at
/// once if it already has), lets `tracer` attach (gdb under Yama ptrace_scope 1), and has the
/// default disposition for every signal but SIGTERM and SIGINT, which it ignores (a stop of the
/// whole job is the harness's to act on), and an empty signal mask. 0, or the errno of the step
/// that failed.
int becomeSupervisedChild(pid_t parent, pid_t tracer);

/// Makes `outputFd` stdout and stderr and `eventsFd` (unless -1) kChildEventsFd, whatever
/// numbers they have now (no dup2 overwrites another's source). 0, or the errno that failed.
int placeOutputAndEvents(int outputFd, int eventsFd);

}  // namespace gpufuzz
