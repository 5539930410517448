// Strays.h: descendants of a child that left its process group (setsid, setpgid) and so escape
// the group kill: caught as orphans of this process (PR_SET_CHILD_SUBREAPER) and killed when the
// run that left them ends, and killed by a watchdog process when this process dies (even by
// SIGKILL, when nothing in it runs).
//
// Contract:
// - prepare() runs once per process before its first child (ChildProcess calls it): it forks the
//   watchdog, then makes this process the reaper of its orphaned descendants. From then on a
//   descendant whose parent dies becomes a child of this process instead of init's.
// - Every child gets `GPUFUZZ_CHILD=<harness>/<run>` in its environment (tagFor()); descendants
//   inherit it. <harness> is unique to this process (pid and start time), <run> to the child.
// - sweep(run) kills (SIGKILL) and reaps every child of this process that is not one that
//   ChildProcess started and reaps itself (own()/disown()), is not in this process's own process
//   group (library helpers forked by this process stay there), and is not tagged with another run
//   that is still live (runBegins()/runEnds()): the orphans of the run that just ended, a stray
//   without a tag, or one of a run that has ended. It passes again while it found any (killing one
//   orphans its children, which then come here), until a pass finds none or `until`; what is left
//   (a process in uninterruptible sleep) is taken by a later sweep. It never waits for any child
//   but the one it killed (no waitpid(-1)), and it holds out spawns while it decides (SpawnGuard),
//   so a child forked but not yet recorded is never taken for a stray and no pid it signals can
//   be reused under it.
// - The watchdog is a process of its own session holding nothing of this process but the read
//   end of a pipe whose write end only this process holds: when this process ends, however it
//   ends, it kills every process whose environment carries this process's tag prefix, pass after
//   pass until none is left, and exits. A descendant that replaced its environment (env -i) is
//   not found by it; one that stayed below a child is, and it is caught by sweep() too.
// - Cost per execution: one read of /proc/self/task/<pid>/children and, for each child found
//   that is not ours, a read of its /proc stat and environ. Nothing when there is none.
// - Thread safety: every function may be called from any thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <utility>

namespace gpufuzz::strays {

using Clock = std::chrono::steady_clock;

/// The variable that carries a child's tag.
inline constexpr const char* kTagVariable = "GPUFUZZ_CHILD";

/// Forks the watchdog and becomes the subreaper; once per process, before the first child.
void prepare();

/// A run number unique in this process, and the environment entry (name, value) that tags it.
std::uint64_t newRun();
std::pair<std::string, std::string> tagFor(std::uint64_t run);
/// The tag prefix the watchdog looks for: `GPUFUZZ_CHILD=<harness>/`.
std::string harnessPrefix();

/// Held from before a child is forked until own() has recorded it.
class SpawnGuard {
 public:
  SpawnGuard();

 private:
  std::shared_lock<std::shared_mutex> lock_;
};

/// A child that ChildProcess will reap itself: never a stray.
void own(pid_t pid);
/// It has been reaped.
void disown(pid_t pid);

/// While a run is live, other runs' sweeps leave the strays that carry its tag.
void runBegins(std::uint64_t run);
void runEnds(std::uint64_t run);

/// Kills and reaps the strays (above); returns how many it found.
int sweep(std::uint64_t run, Clock::time_point until);

/// The watchdog's pid (a process of its own session, not a child of this one); 0 before prepare().
pid_t watchdogPid();

}  // namespace gpufuzz::strays
