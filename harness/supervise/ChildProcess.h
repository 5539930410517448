// ChildProcess.h: one child process in its own process group, its output captured, its progress
// events read as they come, and its end observed without leaving a zombie, a grandchild or a
// file descriptor behind.
//
// Contract:
// - The child runs `executable` (a path; PATH is not searched), or is forked from a fork server
//   running it (Options::forkServer, ForkServer.h), in a new process group whose id
//   is its pid, with stdin from /dev/null, stdout and stderr into one capture pipe, optionally
//   the write end of an events pipe as fd kEventsFd, and no other descriptor of this process.
//   Signal mask and dispositions are reset to the defaults, but SIGTERM and SIGINT are ignored
//   (a stop of the whole job, as Slurm sends it, is the harness's to act on). It is killed
//   (SIGKILL) if the thread that started it exits, so a harness that dies takes its children
//   along.
//   Its environment also gets GPUFUZZ_CHILD=<harness>/<run>, a tag unique to this process and
//   this child that its descendants inherit (Strays.h).
// - run() returns once the child has exited and been reaped. Whatever way it ends, the whole
//   process group is killed before the leader is reaped, so no grandchild outlives it. A
//   descendant that left the group (setsid, setpgid) is not reached by that kill: this process
//   is the subreaper of its descendants (PR_SET_CHILD_SUBREAPER, set before the first child),
//   so such a descendant becomes its child when its parent dies, and once the child is reaped
//   the run's strays are swept: killed and reaped, pass after pass, for up to kPipeGrace
//   (Strays.h says which children count as strays; never waitpid(-1), never a child another
//   ChildProcess waits for, never a stray that carries the tag of another run still going).
//   The pipes are then given kPipeGrace to reach end of file, and closed.
// - When this process dies, even by SIGKILL, its children die by their parent-death signal and
//   a watchdog process (forked once, before the first child) kills every process still carrying
//   this process's tag. A descendant that replaced its environment and left its group before
//   the harness died is the one thing nothing here finds.
// - Output: the last outputLimit bytes are kept, read as they come, at most a megabyte at a
//   time per pipe before the other pipe, the exit and the deadline get their turn, so a child
//   that floods its output neither grows this process nor delays its deadlines. With
//   outputLimit 0 the child's stdout and stderr are /dev/null (a pipe nobody read would block
//   it once full). An events line is kept up to 4096 bytes; the rest of a longer one is dropped.
//   The tail comes back as text under the rule for outside text (harness/base/OutsideText.h):
//   valid UTF-8, control characters and invalid bytes escaped, long lines cut.
// - A ChildProcess destroyed without run() completing kills its group and reaps the child.
// - Options::cancel, once cancelled from any thread, kills the group as a deadline does; the
//   exit says so (ChildExit::cancelled).
// - Thread safety: a ChildProcess belongs to the thread that uses it; any number of them may
//   live on different threads at once (each owns its event loop). killAllChildren() may be
//   called from anywhere, signal handlers included.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/protocol/SupervisedChild.h"
#include "harness/supervise/ChildCommand.h"
#include "harness/supervise/RunCancel.h"

namespace gpufuzz {

/// Decisions taken while the child runs. Called on the thread inside ChildProcess::run().
class ChildObserver {
 public:
  using Clock = std::chrono::steady_clock;
  /// One complete line from the events pipe, without its newline.
  virtual void onEventLine(std::string_view line) = 0;
  /// When onDeadline() is next due; Clock::time_point::max() for never. Asked again after every
  /// batch of event lines and after every onDeadline().
  virtual Clock::time_point deadline() const = 0;
  /// The deadline has come. Every event line the child wrote before it has been delivered, and
  /// the child had not exited. Return true to kill the child's process group.
  virtual bool onDeadline(Clock::time_point now) = 0;
  /// Asked after each event line: true ends ChildProcess::runUntilPaused() there, the child
  /// still running (a persistent child that finished one sequence of many).
  virtual bool paused() const { return false; }

 protected:
  ~ChildObserver() = default;
};

/// How the child ended.
struct ChildExit {
  int status = 0;  // as waitpid(2) reports it: use WIFEXITED / WIFSIGNALED
  bool killedOnDeadline = false;
  bool interrupted = false;  // killAllChildren() ran while this child was alive
  bool unkillable = false;   // it outlived SIGKILL (uninterruptible sleep); reaped in background
  bool serverLost = false;   // its fork server died: `status` is SIGKILL, not what happened
  bool cancelled = false;    // killed by Options::cancel, before it ended on its own
  std::string outputTail;    // the last outputLimit bytes of stdout and stderr, as outside text
  std::chrono::microseconds wall{};
};

class ChildProcess {
 public:
  static constexpr int kEventsFd = kChildEventsFd;

  struct Options {
    bool eventsPipe = false;
    /// Without an events pipe: a descriptor of this process that the child gets as fd 3.
    int fd3 = -1;
    std::size_t outputLimit = 64 * 1024;
    EnvironmentOverrides environment;  // set or replaced in a copy of this process's environment
    /// Fork the child from a fork server for `executable` (ForkServer.h) instead of starting
    /// it afresh: the executable must accept --fork-server; `args` are passed on as they are.
    bool forkServer = false;
    /// Kills the child's group once cancelled (RunCancel.h): ChildExit::cancelled. Must outlive
    /// the ChildProcess.
    RunCancel* cancel = nullptr;
  };

  /// Starts the child. Throws ChildStartError when it cannot run.
  ChildProcess(const ChildCommand& command, const Options& options);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const;
  /// Reads events and output until the child has exited and been reaped; at most once.
  ChildExit run(ChildObserver& observer);
  /// As run(), but returns nullopt as soon as `observer` says it is paused after an event line,
  /// the child still running and its later bytes kept for the next call; called again (with the
  /// same observer or another) it goes on from there. Returns the exit once the child has exited.
  /// Output read while paused counts toward the next call's tail.
  std::optional<ChildExit> runUntilPaused(ChildObserver& observer);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Kills (SIGKILL) the process group of every live child of every ChildProcess in this process.
/// Async-signal-safe: meant for SIGINT/SIGTERM handlers. The runs that it ends report
/// ChildExit::interrupted.
void killAllChildren() noexcept;

/// CPU time (user + system, all threads) the process has used so far; nullopt if it is gone.
std::optional<std::chrono::nanoseconds> processCpuTime(pid_t pid);

/// The first executable called `name` in PATH.
std::optional<std::string> findOnPath(std::string_view name);

struct CapturedRun {
  int status = 0;  // as waitpid(2) reports it
  bool timedOut = false;
  std::string output;  // as outside text (OutsideText.h): a --version line, gdb's stacks
};

/// Runs a command to completion, its output captured; killed (with its group) after `timeout`.
/// Throws ChildStartError when it cannot start.
CapturedRun runCaptured(const ChildCommand& command, std::chrono::milliseconds timeout,
                        std::size_t outputLimit);

}  // namespace gpufuzz
