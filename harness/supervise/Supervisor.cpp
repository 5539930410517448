// Supervisor.cpp: deadlines over the progress events, hang/spin/crash classification, and the
// consistency of what the child reported with how it exited.
#include "harness/supervise/Supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include <cstdio>
#include <exception>
#include <string_view>
#include <utility>

#include "harness/base/OutsideText.h"
#include "harness/protocol/CrashReport.h"
#include "harness/protocol/Events.h"
#include "harness/protocol/RunnerCommandLine.h"
#include "harness/supervise/CrashSite.h"
#include "harness/supervise/StackCapture.h"

namespace gpufuzz {

namespace {

/// "1+3": the 1-based conditions of a set, bit c for condition c + 1.
std::string conditionSet(uint64_t set) {
  std::string text;
  for (unsigned c = 0; c < 64; ++c) {
    if (((set >> c) & 1U) != 0) text += (text.empty() ? "" : "+") + std::to_string(c + 1);
  }
  return text;
}

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A stuck child that used more than this share of one core was spinning, not waiting.
constexpr double kSpinCpuShare = 0.10;
constexpr std::size_t kMaxQuotedLine = 300;

std::string signalName(int sig) {
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

/// The last non-empty line of the child's output (already under the rule for outside text):
/// usually the message that explains its exit. Its tail, when long, from a character's start.
std::string lastLine(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.remove_suffix(1);
  }
  const auto newline = text.rfind('\n');
  if (newline != std::string_view::npos) text.remove_prefix(newline + 1);
  if (text.size() > kMaxQuotedLine) text = text.substr(text.size() - kMaxQuotedLine);
  while (!text.empty() && (static_cast<unsigned char>(text.front()) & 0xc0) == 0x80)
    text.remove_prefix(1);
  return std::string(text);
}

std::string percent(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", share * 100);
  return text;
}

/// How long a child's own handler may take to write every thread's stacks: the runner's leader
/// waits half a second for the other threads.
constexpr std::chrono::milliseconds kOwnStacksWait{3000};

/// How long an operation in which a known planted hang fired is watched, at least.
constexpr std::chrono::milliseconds kKnownFaultWindow{10};

/// Follows the child's progress events: what runs now, how long operations took, the outcome;
/// decides when the child is stuck and records how.
class ProgressWatch final : public ChildObserver {
 public:
  /// pauseOnPass: paused() once the child reported a passing outcome (a persistent child,
  /// which goes on to its next sequence).
  /// `files`: the child's crash and stacks files (a target has the stacks file alone).
  ProgressWatch(const SupervisionLimits& limits, pid_t pid, const CrashFile* files,
                bool pauseOnPass = false)
      : limits_(limits),
        pid_(pid),
        files_(files),
        pauseOnPass_(pauseOnPass),
        lastProgress_(Clock::now()),
        order_(limits.expectedOps, limits.expectedWaits) {}

  bool paused() const override {
    return pauseOnPass_ && outcome_ && !outcome_->failed() && !protocolError_ && !stuck_;
  }
  /// From now on the child is followed to its exit, as a child that runs one sequence is.
  void followToExit() {
    pauseOnPass_ = false;
    lastProgress_ = Clock::now();
  }

  void onEventLine(std::string_view line) override {
    if (protocolError_) return;  // the child is being killed; what follows does not count
    const auto event = parseEvent(line);
    const std::string why = event ? order_.accept(*event) : "not an event";
    const auto now = Clock::now();
    if (!why.empty()) {
      // The line as it came, bytes that are not text escaped: what the adapter has to fix.
      protocolError_ = "protocol: " + outsideLine(line, kMaxQuotedLine) + " (" + why + ")";
      lastProgress_ = now;
      return;
    }
    started_ = true;  // the first event of any kind ends the start-up allowance
    switch (event->kind) {
      case Event::Kind::Start:
        break;
      case Event::Kind::Begin:
        lastBegun_ = running_[event->at.ordinal] = Operation{event->at, event->op, now, now};
        break;
      case Event::Kind::Skip:
        skipped_.push_back(event->at);
        break;
      case Event::Kind::Fail:
      case Event::Kind::Done:
        if (const auto it = running_.find(event->at.ordinal); it != running_.end()) {
          const Operation& op = it->second;
          if (event->kind == Event::Kind::Fail)
            failed_.push_back(FailedOperation{op.at, op.op, event->detail});
          timings_.push_back(OpTiming{
              op.at, op.op, std::chrono::duration_cast<std::chrono::microseconds>(now - op.began),
              deadlineOf(limits_.opDeadlines, op.op, limits_.progressDeadline)});
          running_.erase(it);
        }
        break;
      case Event::Kind::Outcome:
        outcome_ = event->outcome;
        break;
      case Event::Kind::Calls:
        calls_ += RuntimeCalls{event->calls, event->overlapped};
        break;
      case Event::Kind::Reach:
        near_.push_back(event->rule + ": condition " + std::to_string(event->conditions) +
                        "'s counter reached " + std::to_string(event->held));
        break;
      case Event::Kind::Near:
        near_.push_back(event->rule + ": conditions " + conditionSet(event->held) + " of " +
                        std::to_string(event->conditions) + " held together");
        break;
      case Event::Kind::Fault: {
        Operation* op = faultPlace(*event);
        faults_.push_back(FaultFired{op ? op->at : At{}, event->op, event->rule});
        if (op == nullptr) break;
        op->since = now;
        if (event->op == "crash") op->crashFault = true;
        if ((event->op == "hang" || event->op == "spin") &&
            std::find(limits_.knownFaults.begin(), limits_.knownFaults.end(), event->rule) !=
                limits_.knownFaults.end()) {
          op->knownFault = true;
        }
        break;
      }
    }
    lastProgress_ = now;
    cpuSample_.reset();
  }

  // The CPU share is measured over the later half of the window, so that work the operation
  // did before it stopped making progress does not make a hang look like a spin. Each
  // operation in flight has its own window, from its begin (or the last fault in it); between
  // operations the window starts at the last event.
  Clock::time_point deadline() const override {
    const Clock::time_point due = stuckDeadline();
    const std::optional<Clock::time_point> late = lateDue();
    return late ? std::min(due, *late) : due;
  }

  bool onDeadline(Clock::time_point now) override {
    if (protocolError_) return true;
    if (const auto late = lateDue(); late && now >= *late && now < stuckDeadline()) {
      // Late, not stuck: its stacks now, and the child goes on.
      lateStacks_ = stacksNow();
      lateTaken_ = true;
      return false;
    }
    const auto cpu = processCpuTime(pid_);
    if (!cpuSample_) {
      cpuSample_ = CpuSample{now, cpu.value_or(0ns)};
      return false;
    }
    const auto span = std::max<Clock::duration>(now - cpuSample_->taken, 1ns);
    const auto used = cpu ? *cpu - cpuSample_->used : 0ns;
    const double share = std::chrono::duration<double>(used) / std::chrono::duration<double>(span);
    // Blamed: the lowest ordinal in flight past its deadline.
    const Operation* blamed = nullptr;
    for (const auto& [ordinal, op] : running_) {
      if (op.since + allowanceOf(op) <= now) {
        blamed = &op;
        break;
      }
    }
    if (blamed == nullptr && !running_.empty()) blamed = window().op;
    const auto from = blamed ? blamed->since : lastProgress_;
    const auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(now - from);
    const bool between = blamed == nullptr && place() != nullptr;
    stuck_ =
        Stuck{share, "no progress for " + std::to_string(quiet.count()) + " ms" +
                         (between ? " after it completed" : "") + ", " + percent(share) + " CPU"};
    if (blamed) stuckPlace_ = *blamed;
    if (const Operation* op = place()) {
      stuckOp_ = OpTiming{op->at, op->op,
                          std::chrono::duration_cast<std::chrono::microseconds>(
                              now - (blamed ? blamed->began : lastProgress_)),
                          blamed ? allowanceOf(*blamed) : limits_.progressDeadline};
    }
    if (limits_.captureStacks) stacks_ = stacksNow();
    return true;
  }

  /// A failure of `cls` where the child is (or was, when it died): the operation it is stuck
  /// in, one it is in (where a planted crash fired, else the lowest), the last one it began
  /// when it is between operations, else the start or the exit.
  RunOutcome at(OutcomeClass cls, std::string detail) const {
    RunOutcome o;
    o.cls = cls;
    o.detail = std::move(detail);
    if (const Operation* op = place()) {
      o.at = op->at;
      o.op = op->op;
    } else {
      o.op = outcome_ ? "exit" : "start";
    }
    return o;
  }

  struct Stuck {
    double cpuShare;
    std::string detail;
  };
  const std::optional<Stuck>& stuck() const { return stuck_; }
  const std::optional<std::string>& protocolError() const { return protocolError_; }
  const std::optional<RunOutcome>& reported() const { return outcome_; }
  std::vector<OpTiming> takeTimings() { return std::move(timings_); }
  const std::optional<OpTiming>& stuckOp() const { return stuckOp_; }
  std::string takeStacks() { return std::move(stacks_); }
  std::string takeLateStacks() { return std::move(lateStacks_); }
  std::vector<FaultFired> takeFaults() { return std::move(faults_); }
  std::vector<FailedOperation> takeFailed() { return std::move(failed_); }
  std::vector<At> takeSkipped() { return std::move(skipped_); }
  const RuntimeCalls& calls() const { return calls_; }
  const std::vector<std::string>& near() const { return near_; }

 private:
  struct Operation {
    At at;
    std::string op;
    Clock::time_point began;
    /// Its begin, or the last fault event in it: where its window starts.
    Clock::time_point since;
    /// A rule whose hang is a confirmed finding fired in it.
    bool knownFault = false;
    /// A rule whose effect is a crash fired in it.
    bool crashFault = false;
  };
  /// The window that ends first: of the operation in flight whose deadline comes first, or,
  /// with none in flight, from the last event.
  struct Window {
    Clock::time_point from;
    std::chrono::milliseconds allowance;
    const Operation* op = nullptr;
  };
  Window window() const {
    if (!started_) return {lastProgress_, limits_.startDeadline};
    if (running_.empty()) return {lastProgress_, limits_.progressDeadline};
    Window first{Clock::time_point::max(), {}, nullptr};
    for (const auto& [ordinal, op] : running_) {
      const auto allowance = allowanceOf(op);
      if (first.op == nullptr || op.since + allowance < first.from + first.allowance)
        first = {op.since, allowance, &op};
    }
    return first;
  }

  /// The operation a `fault` event names, or the one in flight (the last begun of several).
  Operation* faultPlace(const Event& e) {
    if (e.faultAt) {
      const auto it = running_.find(e.faultAt->ordinal);
      return it != running_.end() ? &it->second : nullptr;
    }
    if (running_.empty()) return nullptr;
    const auto it = running_.find(lastBegun_ ? lastBegun_->at.ordinal : 0);
    return it != running_.end() ? &it->second : &running_.begin()->second;
  }

  /// Every thread's stack of the child: its own when it answers with its program's frames
  /// (CrashFile::askStacks: the runner's, or a target's through its client library), else by a
  /// debugger. A Python target's own are its Python functions, where gdb sees the interpreter's.
  /// The child is stopped while the debugger attaches, so that it is still where it was: under load
  /// gdb started after a 600 ms call had returned, and found the child gone.
  std::string stacksNow() {
    std::string own = files_ ? files_->askStacks(kOwnStacksWait) : std::string();
    if (!stuckFrames(own).empty()) return own;
    ::kill(pid_, SIGSTOP);
    std::string debugger = captureStacks(pid_);
    ::kill(pid_, SIGCONT);
    return debugger.empty() ? own : debugger;
  }

  /// When the child counts as stuck, or is sampled for it.
  Clock::time_point stuckDeadline() const {
    if (protocolError_) return lastProgress_;  // now: the run stops at a protocol error
    if (stuck_) return Clock::time_point::max();
    const Window w = window();
    if (!cpuSample_) return w.from + w.allowance / 2;
    return std::max(w.from + w.allowance, cpuSample_->taken + w.allowance / 4);
  }

  /// When the first operation in flight runs past its late deadline, while late stacks are
  /// still to be taken (SupervisionLimits::lateDeadline).
  std::optional<Clock::time_point> lateDue() const {
    if (!limits_.lateDeadline || !limits_.captureStacks || lateTaken_ || stuck_) return {};
    std::optional<Clock::time_point> due;
    for (const auto& [ordinal, op] : running_) {
      if (limits_.lateOrdinal && ordinal != *limits_.lateOrdinal) continue;
      const auto at = op.began + deadlineOf(limits_.lateDeadlines, op.op, *limits_.lateDeadline);
      if (!due || at < *due) due = at;
    }
    return due;
  }

  std::chrono::milliseconds allowanceOf(const Operation& op) const {
    const auto full = deadlineOf(limits_.opDeadlines, op.op, limits_.progressDeadline);
    // The runner said a rule whose hang is known fired here: the call never returns, so only
    // the CPU share (hang or spin) is left to see, over a short window.
    return op.knownFault ? std::clamp(full / 10, kKnownFaultWindow, full) : full;
  }
  struct CpuSample {
    Clock::time_point taken;
    std::chrono::nanoseconds used;
  };

  const Operation* place() const {
    if (stuckPlace_) return &*stuckPlace_;
    if (!running_.empty()) {
      for (const auto& [ordinal, op] : running_) {
        if (op.crashFault) return &op;
      }
      return &running_.begin()->second;
    }
    if (outcome_ || !lastBegun_) return nullptr;
    return &*lastBegun_;
  }

  const SupervisionLimits& limits_;
  pid_t pid_;
  const CrashFile* files_;
  bool pauseOnPass_;
  bool started_ = false;
  Clock::time_point lastProgress_;
  /// In flight, by ordinal (`end` is 0).
  std::map<uint32_t, Operation> running_;
  std::optional<Operation> lastBegun_, stuckPlace_;
  std::optional<RunOutcome> outcome_;
  std::optional<CpuSample> cpuSample_;
  std::vector<OpTiming> timings_;
  std::optional<Stuck> stuck_;
  std::optional<OpTiming> stuckOp_;
  std::string stacks_;
  bool lateTaken_ = false;
  std::string lateStacks_;
  std::vector<FaultFired> faults_;
  std::vector<FailedOperation> failed_;
  std::vector<At> skipped_;
  RuntimeCalls calls_;
  std::vector<std::string> near_;
  EventOrder order_;
  std::optional<std::string> protocolError_;
};

/// What the exit status and the reported outcome say together, for a child that exited.
void judgeExit(int code, const ProgressWatch& watch, const std::string& output,
               const SupervisionLimits& limits, Supervised& result) {
  const bool target = limits.target;
  const auto withOutput = [&](std::string message) {
    const std::string line = lastLine(output);
    return line.empty() ? message : message + ": " + line;
  };
  const auto& reported = watch.reported();
  if (reported) result.outcome = *reported;
  if (target) {
    // A target's outcome line stands; without one, its adapter failed, and that is a finding.
    if (!reported) {
      result.outcome = watch.at(
          OutcomeClass::Error,
          withOutput("target exited with status " + std::to_string(code) + " without an outcome"));
    }
    return;
  }
  if (limits.signalAsExitStatus && !reported && code >= 4 && code <= 64) {
    result.outcome = watch.at(OutcomeClass::Crash, signalName(code) + " (exit status " +
                                                       std::to_string(code) + " of its wrapper)");
  } else if (code == 2) {
    result.harnessError = withOutput("the child rejected its input (exit status 2)");
  } else if (code == 3) {
    result.harnessError = withOutput("the child failed internally (exit status 3)");
  } else if (code != 0 && code != 1) {
    result.harnessError = withOutput("unexpected exit status " + std::to_string(code));
  } else if (!reported) {
    result.harnessError = withOutput("the child exited with status " + std::to_string(code) +
                                     " without reporting an outcome");
  } else if ((code == 0) != !reported->failed()) {
    result.harnessError = "the child exited with status " + std::to_string(code) +
                          " but reported '" + outcomeText(*reported) + "'";
  }
}

}  // namespace

std::chrono::milliseconds deadlineOf(const OpDeadlines& deadlines, std::string_view op,
                                     std::chrono::milliseconds otherwise) {
  const auto it = deadlines.find(op);
  return it != deadlines.end() ? it->second : otherwise;
}

std::string plantedBy(const RunOutcome& outcome, const std::vector<FaultFired>& faults) {
  const auto inFailingOp = [&](const FaultFired& f) { return outcome.at && f.at == *outcome.at; };
  // The last rule of the failing operation, when its effect is one of `effects`.
  const auto lastIn = [&](std::initializer_list<std::string_view> effects) -> std::string {
    for (auto it = faults.rbegin(); it != faults.rend(); ++it) {
      if (!inFailingOp(*it)) continue;
      return std::find(effects.begin(), effects.end(), it->effect) != effects.end() ? it->rule : "";
    }
    return {};
  };
  // The first rule of `effect` that fired: a run stops at its failing operation. One
  // rule is one bug however often it fires: keyed by every firing, one leak rule that fired
  // three or four times gave two causes, and no shrink could remove a firing.
  const auto first = [&](std::string_view effect) -> std::string {
    for (const FaultFired& f : faults) {
      if (f.effect == effect) return f.rule;
    }
    return {};
  };
  switch (outcome.cls) {
    case OutcomeClass::Hang:
    case OutcomeClass::Spin:
      return lastIn({"hang", "spin", "delay"});
    case OutcomeClass::Slow:
      return lastIn({"delay"});
    case OutcomeClass::Crash:
      return lastIn({"crash"});
    case OutcomeClass::Error:
      return lastIn({"error"});
    case OutcomeClass::Mismatch:
      return first("corrupt");
    case OutcomeClass::Leak:
      return first("leak");
    case OutcomeClass::Pass:
    case OutcomeClass::Invalid:
      break;
  }
  return {};
}

namespace {

ChildProcess::Options childOptions(const SupervisionLimits& limits,
                                   const CrashFile* files = nullptr) {
  ChildProcess::Options options;
  options.eventsPipe = true;
  options.outputLimit = limits.outputLimit;
  options.environment = limits.environment;
  options.environment.emplace_back(kEventsFdVariable, std::to_string(ChildProcess::kEventsFd));
  if (files && !files->path().empty())
    options.environment.emplace_back(kCrashFileVariable, files->path().string());
  if (files && !files->stacksPath().empty())
    options.environment.emplace_back(kStacksFileVariable, files->stacksPath().string());
  options.forkServer = limits.forkServer;
  options.cancel = limits.cancel;
  return options;
}

/// How much longer than its own deadlines a target's run under a debugger may take.
constexpr int kDebuggerSlowdown = 4;

/// A crashed target's frames, by a run of the same command under gdb or cuda-gdb (fresh, not
/// forked: the debugger starts the program); what happened instead when they cannot be taken.
std::string crashTextUnderDebugger(const ChildCommand& command, const SupervisionLimits& limits);

/// How a supervised child's run ended, from its exit and what its events said.
Supervised classify(ChildExit exit, ProgressWatch& watch, const SupervisionLimits& limits) {
  Supervised result;
  result.outputTail = std::move(exit.outputTail);
  result.wall = exit.wall;
  result.timings = watch.takeTimings();
  result.lateStacks = watch.takeLateStacks();
  if (WIFEXITED(exit.status)) result.exitCode = WEXITSTATUS(exit.status);
  if (WIFSIGNALED(exit.status)) result.termSignal = WTERMSIG(exit.status);

  if (exit.cancelled) {
    result.cancelled = true;
    result.harnessError = kCancelledRun;
  } else if (const auto& violation = watch.protocolError()) {
    if (limits.target) {
      result.outcome = watch.at(OutcomeClass::Error, *violation);
    } else {
      result.harnessError = "the runner broke the event protocol: " + *violation;
    }
  } else if (const auto& stuck = watch.stuck()) {
    result.stuck = true;
    result.cpuShareWhileStuck = stuck->cpuShare;
    result.stacks = watch.takeStacks();
    result.stuckOp = watch.stuckOp();
    const auto cls = stuck->cpuShare < kSpinCpuShare ? OutcomeClass::Hang : OutcomeClass::Spin;
    result.outcome = watch.at(
        cls, stuck->detail + (exit.unkillable ? " (survived SIGKILL: uninterruptible sleep)" : ""));
  } else if (exit.interrupted && result.termSignal == SIGKILL) {
    result.harnessError = "interrupted: the harness killed its children";
  } else if (exit.serverLost) {
    result.harnessError = "the fork server died while its child ran";
  } else if (result.termSignal != 0) {
    result.outcome =
        watch.at(OutcomeClass::Crash,
                 signalName(result.termSignal) + (WCOREDUMP(exit.status) ? " (core dumped)" : ""));
  } else {
    judgeExit(result.exitCode, watch, result.outputTail, limits, result);
  }
  result.faults = watch.takeFaults();
  result.failed = watch.takeFailed();
  result.skipped = watch.takeSkipped();
  result.calls = watch.calls();
  result.near = watch.near();
  if (!result.harnessError) result.outcome.fault = plantedBy(result.outcome, result.faults);
  return result;
}

/// The frames of a crashed run: the runner's own, from its crash file.
void addCrashFrames(Supervised& result, const CrashFile& crash, long pid) {
  if (result.harnessError || result.outcome.cls != OutcomeClass::Crash) return;
  std::string text = crash.text(pid);
  if (!text.empty()) result.stacks = std::move(text);
}

}  // namespace

Supervised supervise(const ChildCommand& command, const SupervisionLimits& limits) {
  ChildCommand withEvents = command;
  if (!limits.target) {
    RunnerArgs events;
    events.eventsFd = ChildProcess::kEventsFd;
    for (std::string& arg : runnerArgs(events))
      withEvents.args.push_back(std::move(arg));
  }
  if (limits.cancel && limits.cancel->cancelled()) {
    Supervised result;
    result.cancelled = true;
    result.harnessError = kCancelledRun;
    return result;
  }
  const CrashFile crash(/*runner=*/!limits.target);
  std::optional<ChildProcess> child;
  try {
    child.emplace(withEvents, childOptions(limits, &crash));
  } catch (const std::exception& e) {  // ChildStartError, or no descriptors or memory left
    Supervised result;
    result.harnessError = std::string("cannot start the child: ") + e.what();
    return result;
  }
  ProgressWatch watch(limits, child->pid(), &crash);
  Supervised result = classify(child->run(watch), watch, limits);
  addCrashFrames(result, crash, child->pid());
  if (limits.target && limits.captureStacks && !result.harnessError &&
      result.outcome.cls == OutcomeClass::Crash) {
    result.stacks = crashTextUnderDebugger(withEvents, limits);
  }
  return result;
}

namespace {

std::string crashTextUnderDebugger(const ChildCommand& command, const SupervisionLimits& limits) {
  const std::optional<StackDebugger> debugger = findStackDebugger();
  if (!debugger) {
    return "crash frames not taken: neither gdb nor cuda-gdb is installed; the crash's cause "
           "is its class and operation\n";
  }
  SupervisionLimits underDebugger = limits;
  underDebugger.forkServer = false;
  underDebugger.captureStacks = false;
  underDebugger.outputLimit = std::max<std::size_t>(limits.outputLimit, 256 * 1024);
  underDebugger.startDeadline = limits.startDeadline + debugger->timeout;
  // After the crash the debugger reads the modules' symbols before it prints: no events then.
  underDebugger.progressDeadline =
      std::max(limits.progressDeadline * kDebuggerSlowdown,
               std::chrono::duration_cast<std::chrono::milliseconds>(debugger->timeout));
  for (auto& [op, deadline] : underDebugger.opDeadlines)
    deadline = std::max(deadline * kDebuggerSlowdown, underDebugger.progressDeadline);
  const std::string note =
      "crash frames not taken: under " + debugger->name + " (" + debugger->path + ") ";
  try {
    ChildProcess child(crashDebuggerCommand(debugger->path, command), childOptions(underDebugger));
    ProgressWatch watch(underDebugger, child.pid(), nullptr);
    const ChildExit exit = child.run(watch);
    std::string text = crashTextFromDebugger(debugger->name, exit.outputTail);
    if (!text.empty()) return text;
    return note + "the program did not stop on a signal: " + lastLine(exit.outputTail) + "\n";
  } catch (const std::exception& e) {
    return note + "it could not start: " + e.what() + "\n";
  }
}

}  // namespace

PersistentChild::PersistentChild(ChildCommand command, std::filesystem::path requests,
                                 unsigned maxSequences)
    : command_(std::move(command)),
      requests_(std::move(requests)),
      maxSequences_(std::max(maxSequences, 1U)) {
  RunnerArgs persistent;
  persistent.persistent = requests_.string();
  persistent.eventsFd = ChildProcess::kEventsFd;
  for (std::string& arg : runnerArgs(persistent))
    command_.args.push_back(std::move(arg));
}

PersistentChild::~PersistentChild() {
  end();
}

void PersistentChild::end() {
  child_.reset();  // kills its group and reaps it
  crash_.reset();
  if (requestFd_ >= 0) ::close(requestFd_);
  requestFd_ = -1;
  std::error_code ignored;
  std::filesystem::remove(requests_, ignored);
  sequencesRun_ = 0;
}

Supervised PersistentChild::run(const std::string& file, const SupervisionLimits& limits) {
  Supervised result;
  if (!child_) {
    std::error_code ignored;
    std::filesystem::remove(requests_, ignored);
    if (::mkfifo(requests_.c_str(), 0600) != 0 ||
        (requestFd_ = ::open(requests_.c_str(), O_RDWR | O_CLOEXEC)) < 0) {
      result.harnessError = "cannot make the persistent child's requests pipe " +
                            requests_.string() + ": " + std::strerror(errno);
      end();
      return result;
    }
    try {
      crash_ = std::make_unique<CrashFile>(true);
      child_ = std::make_unique<ChildProcess>(command_, childOptions(limits, crash_.get()));
    } catch (const std::exception& e) {
      result.harnessError = std::string("cannot start the child: ") + e.what();
      end();
      return result;
    }
  }
  // The reader holds the pipe open, so a line this short is written whole or not at all.
  const std::string request = file + "\n";
  if (::write(requestFd_, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    result.harnessError =
        std::string("cannot hand the persistent child its sequence: ") + std::strerror(errno);
    end();
    return result;
  }
  const auto began = Clock::now();
  ProgressWatch watch(limits, child_->pid(), crash_.get(), /*pauseOnPass=*/true);
  std::optional<ChildExit> exit = child_->runUntilPaused(watch);
  if (!exit && ++sequencesRun_ >= maxSequences_) {
    // Its last sequence: the process ends, and how it ends belongs to this run, as a fresh
    // child's exit belongs to its one sequence.
    ::close(requestFd_);
    requestFd_ = -1;
    watch.followToExit();
    exit = child_->runUntilPaused(watch);
  }
  if (!exit) {
    result.outcome = *watch.reported();
    result.timings = watch.takeTimings();
    result.faults = watch.takeFaults();
    result.failed = watch.takeFailed();
    result.skipped = watch.takeSkipped();
    result.calls = watch.calls();
    result.near = watch.near();
    result.wall = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - began);
    return result;
  }
  result = classify(std::move(*exit), watch, limits);
  if (crash_) addCrashFrames(result, *crash_, child_->pid());
  result.wall = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - began);
  end();
  return result;
}

}  // namespace gpufuzz
