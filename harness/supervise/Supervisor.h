// Supervisor.h: runs one child (normally gpufuzz-runner) under per-operation deadlines and says
// how it ended, in the outcome classes of the sequence contract (docs/sequences.md).
//
// Contract:
// - The child reports progress on fd 3, named by GPUFUZZ_EVENTS_FD=3 in its environment (the
//   project's runner also gets "--events-fd 3"): the events of harness/protocol/Events.h, in
//   the order docs/target.md gives. A line that is not an event, or an event out of order, is an
//   `error` whose detail is "protocol: " and the line, at the operation the child is in; the
//   child is killed there. It runs in its own process group; that group is killed before
//   supervise() returns, whatever happened, and the child is reaped: no zombie, no grandchild
//   and no file descriptor outlives the call.
// - An operation (from its `begin`; each of several in flight on its own) or the interval
//   between two events that lasts longer than its deadline (progressDeadline, or its kind's), or a
//   child that sends no `start` within startDeadline, is stuck: its CPU share over the later half
//   of that window tells hang (< 10%) from spin; every thread's stack is captured when asked for,
//   by the child itself (CrashFile::askStacks: the runner, or a target through its client
//   library), else with gdb or cuda-gdb when one is there (StackCapture.h); then the group is
//   killed. A stuck result is provisional: the caller confirms it with a longer deadline (still
//   stuck: hang/spin; finished: slow).
// - A child killed by a signal is a crash at the last operation it began. The project's runner
//   writes the frames where it died to a file named in its environment (CrashSite.h); a target's
//   are taken by a second run under gdb or cuda-gdb when captureStacks asks for stacks.
// - Otherwise the outcome is the one the child reported. The project's runner's must agree with
//   its exit status (0: pass, 1: a failure); anything else is the harness's problem, not the
//   system under test's: harnessError says what, and `outcome` is then meaningless. A target
//   (SupervisionLimits::target) that exits without an outcome has an `error` at the last
//   operation it began, "target exited with status N without an outcome"; its protocol errors
//   are outcomes too.
// - Thread safety: supervise() may run on any number of threads at once; each call owns its
//   event loop. killAllChildren() (ChildProcess.h) ends every supervised child, from a signal
//   handler if need be; the calls it interrupts report a harnessError.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/base/RunOutcome.h"
#include "harness/supervise/ChildProcess.h"
#include "harness/supervise/CrashSite.h"

namespace gpufuzz {

/// The harness error of a run cancelled (SupervisionLimits::cancel): a caller no longer needed it.
inline constexpr const char* kCancelledRun = "cancelled: the run was no longer needed";

/// Deadlines by kind of operation (by name).
using OpDeadlines = std::map<std::string, std::chrono::milliseconds, std::less<>>;

/// The deadline `deadlines` gives an operation of kind `op`, or `otherwise` for a kind it lacks.
std::chrono::milliseconds deadlineOf(const OpDeadlines& deadlines, std::string_view op,
                                     std::chrono::milliseconds otherwise);

struct SupervisionLimits {
  /// An operation, or the gap between two events, that makes no progress for this long is stuck.
  std::chrono::milliseconds progressDeadline{1000};
  /// Deadlines of their own for operations of these kinds (by name); others use
  /// progressDeadline.
  OpDeadlines opDeadlines;
  /// Allowance from process start to the `start` event (loading, driver initialisation).
  std::chrono::milliseconds startDeadline{10000};
  /// Keep the last this many bytes of the child's stdout and stderr.
  std::size_t outputLimit = 64 * 1024;
  /// Capture every thread's stack of a stuck child: its own (the runner's, or a target's client
  /// library's), else by gdb on PATH, else cuda-gdb (each bounded by a timeout).
  bool captureStacks = true;
  /// Extra or replaced environment variables for the child (e.g. CUDA_VISIBLE_DEVICES).
  EnvironmentOverrides environment;
  /// Fork the child from a fork server of the command (ForkServer.h); a command that does not
  /// serve forks is started afresh.
  bool forkServer = false;
  /// The child is a target of docs/target.md, not the project's runner: what it did wrong is an
  /// outcome of the system under test (a protocol error, an exit without an outcome), not a
  /// harness error, and its outcome line stands whatever its exit status.
  bool target = false;
  /// The child is a wrapper (compute-sanitizer) that exits with the signal's number when a signal
  /// ends the program it runs: an exit status of 4 to 64 without an outcome is a crash by that
  /// signal (the runner itself exits with 0 to 3 only).
  bool signalAsExitStatus = false;
  /// The operations of the sequence the child runs, by kind name, in order: a `begin` must name
  /// the next one. Empty: only the ordinals are checked.
  std::vector<std::string> expectedOps;
  /// For a threaded sequence: what each operation waits for (threadWaits), so several may be in
  /// flight, each watched against its own kind's deadline. Empty: one after another.
  std::vector<std::vector<std::size_t>> expectedWaits;
  /// Fault-plan rules (as cited) whose hangs and spins are confirmed findings already: an
  /// operation in which one of them fired is stuck after a tenth of its deadline (at least
  /// 10 ms: long enough to tell a hang from a spin), since the rule's call never returns.
  std::vector<std::string> knownFaults;
  /// Once cancelled (RunCancel.h), the child is killed, or never started: Supervised::cancelled.
  /// Must outlive the run.
  RunCancel* cancel = nullptr;
  /// With captureStacks, the child's stacks are taken once an operation runs past this deadline
  /// (lateDeadlines by kind), and the child goes on: where a slow operation spent its time
  /// (Supervised::lateStacks). A long confirmation sets it to the first run's deadlines.
  std::optional<std::chrono::milliseconds> lateDeadline;
  OpDeadlines lateDeadlines;
  /// The operation whose lateness takes them (its ordinal, `end` 0); any one when unset. Another
  /// late one, such as a slow start under load, would give the wrong frames.
  std::optional<uint32_t> lateOrdinal;
};

/// A fault-plan rule the child said fired (Events.h `fault`), with the operation it fired in.
struct FaultFired {
  At at;
  std::string effect;  // "hang", "corrupt", "delay", ...
  std::string rule;    // as the plan cites it
};

/// Runtime calls made, and those begun while another thread was inside one (docs/sequences.md,
/// Threads on real runtimes).
struct RuntimeCalls {
  uint64_t calls = 0;
  uint64_t overlapped = 0;
  RuntimeCalls& operator+=(const RuntimeCalls& o) {
    calls += o.calls;
    overlapped += o.overlapped;
    return *this;
  }
  bool operator==(const RuntimeCalls&) const = default;
};

/// An operation that ended with `fail`: it failed as its mark asked, or ran out for real.
struct FailedOperation {
  At at;
  std::string op;
  std::string detail;
  bool operator==(const FailedOperation&) const = default;
};

/// The rule that planted `outcome`, as cited, or empty: for a hang, spin, crash or error, the
/// last rule fired in the failing operation, when its effect is that failure (a hang or spin
/// also from a delay, a slow operation only from one); for a mismatch, the first corrupting rule
/// fired up to the failing operation; for a leak, the first leaking one. A rule is named once,
/// however often it fired, and a run that several rules spoiled is the first one's finding.
std::string plantedBy(const RunOutcome& outcome, const std::vector<FaultFired>& faults);

/// How long one completed operation took, from its `begin` to its `done` (for a stuck one: how
/// long it was watched), and the deadline it had.
struct OpTiming {
  At at;
  std::string op;
  std::chrono::microseconds elapsed{};
  std::chrono::milliseconds deadline{};
};

struct Supervised {
  /// The child's reported outcome; hang or spin when stuck; crash when killed by a signal.
  /// When stuck before its first operation or after its last, `at` is absent and `op` says
  /// "start" or "exit".
  RunOutcome outcome;
  bool stuck = false;
  /// The child's CPU time over wall time in the later half of the stuck window (0..cores).
  double cpuShareWhileStuck = 0;
  /// Every thread's stack of the stuck child, headed by what took it (the runner's handler, a
  /// target's, or a debugger as it printed it); for a crash, the crashing thread's frames
  /// (CrashSite.h: the runner's own, or a target's by a run under a debugger when captureStacks
  /// asks for them); empty if not captured.
  std::string stacks;
  /// Every thread's stack once an operation ran past SupervisionLimits::lateDeadline, taken the
  /// first time one did; empty when none did or none were asked for.
  std::string lateStacks;
  /// The last outputLimit bytes of stdout and stderr.
  std::string outputTail;
  int exitCode = -1;   // when it exited
  int termSignal = 0;  // when a signal ended it
  /// Completed operations' durations, in order (for deadline calibration).
  std::vector<OpTiming> timings;
  /// When stuck in or after an operation: that operation, watched from its `begin` (or, between
  /// operations, from the last event) until it counted as stuck.
  std::optional<OpTiming> stuckOp;
  std::chrono::microseconds wall{};
  /// The fault-plan rules that fired, in order (once per rule); outcome.fault names the one
  /// that planted the outcome, if any.
  std::vector<FaultFired> faults;
  /// Operations that ended with `fail` (docs/failures.md): marked calls that failed, or real
  /// exhaustion, in order, with what the child said of each.
  std::vector<FailedOperation> failed;
  /// Operations skipped because they use a name a failed operation never made, in order.
  std::vector<At> skipped;
  /// The runtime calls the child said it made (`calls` events), and those that overlapped.
  RuntimeCalls calls;
  /// Each set of a fault-plan rule's conditions that held together at one call, and how far
  /// each condition's counter climbed: "PLAN:LINE: RULE: conditions 1+3 of 3 held together",
  /// "PLAN:LINE: RULE: condition 2's counter reached 3" (`near`, `reach`; guided search).
  std::vector<std::string> near;
  /// Set when the run says nothing about the system under test: the child could not start,
  /// exited with 2 (bad input) or 3 (internal error) or without an outcome, contradicted its
  /// outcome with its exit status, or was interrupted by killAllChildren().
  std::optional<std::string> harnessError;
  /// Cancelled (SupervisionLimits::cancel) before it ended on its own; harnessError says so.
  bool cancelled = false;
};

Supervised supervise(const ChildCommand& command, const SupervisionLimits& limits);

/// A child that runs sequences one after another in one process (--persistent N, docs/cli.md): the
/// runner started with `--persistent FIFO` reads the path of each sequence file from the named
/// pipe FIFO and reports its events as a child of one sequence does. run() hands it the next
/// file and supervises that sequence alone, with the deadlines and classification of
/// supervise(). A sequence that does not pass ends the process (the runner exits after a
/// failure; a stuck one is killed), and so does the last of maxSequences, whose result then
/// includes how the process exited, as a fresh child's does; the next run() starts a fresh one.
/// Not thread-safe: one per worker.
class PersistentChild {
 public:
  /// `command`: the runner and its options, without a sequence file; `requests`: a path for the
  /// named pipe, made when a process starts and removed when it ends.
  PersistentChild(ChildCommand command, std::filesystem::path requests, unsigned maxSequences);
  ~PersistentChild();
  PersistentChild(const PersistentChild&) = delete;
  PersistentChild& operator=(const PersistentChild&) = delete;

  /// `limits`' environment, fork server and output limit apply when a process starts; its
  /// deadlines and expected operations, to this sequence.
  Supervised run(const std::string& file, const SupervisionLimits& limits);
  /// Sequences the running process has passed (0: no process).
  unsigned sequencesRun() const { return sequencesRun_; }
  /// Ends the process now (killed: it holds nothing the next one needs).
  void end();

 private:
  ChildCommand command_;
  std::filesystem::path requests_;
  unsigned maxSequences_;
  std::unique_ptr<ChildProcess> child_;
  std::unique_ptr<CrashFile> crash_;  // the running process's (CrashSite.h)
  int requestFd_ = -1;
  unsigned sequencesRun_ = 0;
};

}  // namespace gpufuzz
