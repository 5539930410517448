// Trial.cpp: supervised runs with confirmation of deadline misses.
#include "harness/search/Trial.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "harness/base/AtomicFile.h"
#include "harness/base/ModelFile.h"
#include "harness/protocol/RunnerCommandLine.h"
#include "model/renderer/ReferenceModel.h"

namespace gpufuzz {

namespace {

constexpr const char* kStoppedBeforeStart = "stopped before it started";
constexpr const char* kCancelledBeforeStart = "cancelled before it started";

std::string millisText(std::chrono::microseconds us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", static_cast<double>(us.count()) / 1000.0);
  return text;
}

}  // namespace

std::filesystem::path executableDir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path() : exe.parent_path();
}

DeviceSpread::DeviceSpread(std::vector<std::string> devices, std::string variable)
    : devices_(std::move(devices)),
      variable_(std::move(variable)),
      running_(devices_.size(), 0),
      started_(devices_.size(), 0) {}

std::string DeviceSpread::value(std::size_t index) const {
  if (variable_ != "CUDA_VISIBLE_DEVICES") return devices_[index];
  std::string list = devices_[index];
  for (std::size_t i = 1; i < devices_.size(); ++i)
    list += "," + devices_[(index + i) % devices_.size()];
  return list;
}

std::string DeviceSpread::startedText() const {
  std::lock_guard lock(mutex_);
  std::string text;
  for (std::size_t i = 0; i < devices_.size(); ++i)
    text += (i ? ", " : "") + devices_[i] + ": " + std::to_string(started_[i]);
  return text;
}

std::vector<std::string> DeviceSpread::visibleDevices(int count, const char* cudaVisibleDevices) {
  std::vector<std::string> devices;
  if (cudaVisibleDevices && *cudaVisibleDevices) {
    std::string_view list(cudaVisibleDevices);
    while (!list.empty() && devices.size() < static_cast<std::size_t>(std::max(count, 0))) {
      const auto comma = list.find(',');
      devices.emplace_back(list.substr(0, comma));
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
    return devices;
  }
  for (int i = 0; i < count; ++i)
    devices.push_back(std::to_string(i));
  return devices;
}

std::size_t DeviceSpread::acquire() {
  std::lock_guard lock(mutex_);
  std::size_t best = 0;
  for (std::size_t i = 1; i < running_.size(); ++i) {
    if (running_[i] < running_[best]) best = i;
  }
  ++running_[best];
  ++started_[best];
  return best;
}

void DeviceSpread::release(std::size_t index) {
  std::lock_guard lock(mutex_);
  --running_[index];
}

namespace {

/// Which try of a sequence a child runs (0, 1, ...): a target whose threads follow a schedule
/// may seed it with this, as the runner's `--try` seeds the sim's.
constexpr const char* kTryVariable = "GPUFUZZ_TRY";

/// Where leaks compute-sanitizer reports at a context's destroy are placed: the sequence's first
/// operation that destroys a context (a renderer's or a bare one).
std::optional<OpPlace> firstContextDestroy(const Sequence& seq) {
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    const RendererOp kind = rendererOp(seq.ops[i]);
    if (kind == RendererOp::Destroy || kind == RendererOp::CtxDestroy) {
      return OpPlace{At{static_cast<uint32_t>(i + 1)}, std::string(seq.ops[i].name())};
    }
  }
  return std::nullopt;
}

}  // namespace

TrialRunner::TrialRunner(TrialSetup setup, DeadlineCalibrator& deadlines)
    : setup_(std::move(setup)), deadlines_(deadlines) {}

ChildCommand TrialRunner::childCommand() const {
  ChildCommand command;
  if (!setup_.target.empty()) {
    // CMD ARGS... FILE; a fork server of it is CMD ARGS... (docs/target.md).
    command.executable = setup_.target.words.front();
    command.args.assign(setup_.target.words.begin() + 1, setup_.target.words.end());
    command.serverArgs = command.args.size();
    command.startEnvironment = setup_.startEnvironment;
  } else {
    command.executable = setup_.runner;
    // The runner's fork server binds every symbol at its start, so its children resolve none:
    // resolving lazily, each child faulted in the linker's pages and copies of the GOTs it
    // wrote, about a fifth of a one-operation child's page faults (bench/RESULTS.md).
    command.serverEnvironment = {{"LD_BIND_NOW", "1"}};
    RunnerArgs args;
    args.overrides = {setup_.backend, std::string(policyName(setup_.policy)), setup_.faults,
                      setup_.backendOptions, setup_.schedule};
    args.quiet = true;
    command.args = runnerArgs(args);
  }
  return command;
}

SupervisionLimits TrialRunner::limitsFor(const Sequence& seq, Millis deadline,
                                         DeadlineCalibrator::ByKind kindDeadlines,
                                         bool stacks) const {
  SupervisionLimits limits;
  limits.target = !setup_.target.empty();
  for (const Operation& op : seq.ops)
    limits.expectedOps.emplace_back(op.name());
  if (seq.threadCount() > 1) limits.expectedWaits = threadWaits(seq);
  limits.progressDeadline = deadline;
  limits.opDeadlines = std::move(kindDeadlines);
  limits.startDeadline = deadlines_.startDeadline();
  limits.captureStacks = stacks && setup_.captureStacks;
  limits.environment = setup_.environment;
  limits.environment.emplace_back(kModelVariable,
                                  modelFileIn(setup_.workDir, seq.lifecycle()).string());
  limits.environment.emplace_back(kModelFactsVariable,
                                  modelFactsFileIn(setup_.workDir, seq.lifecycle()).string());
  limits.forkServer = setup_.forkServer;
  std::lock_guard lock(kindsMutex_);
  for (const RunOutcome& kind : confirmedKinds_) {
    if (!kind.fault.empty()) limits.knownFaults.push_back(kind.fault);
  }
  return limits;
}

namespace {

/// Holds one of the session's child slots for as long as it lives.
struct SlotHold {
  ChildSlots* slots;
  explicit SlotHold(ChildSlots* s) : slots(s) {
    if (slots) slots->acquire();
  }
  ~SlotHold() {
    if (slots) slots->release();
  }
  SlotHold(const SlotHold&) = delete;
  SlotHold& operator=(const SlotHold&) = delete;
};

}  // namespace

Supervised TrialRunner::runOnce(const std::filesystem::path& file, const Sequence& seq,
                                Millis deadline, DeadlineCalibrator::ByKind kindDeadlines,
                                bool stacks, uint64_t attempt, const std::string& plantedHang,
                                RunCancel* cancel, const LateAfter* late) {
  ChildCommand command = childCommand();
  if (setup_.target.empty()) {
    RunnerArgs which;
    which.attempt = attempt;
    for (std::string& arg : runnerArgs(which))
      command.args.push_back(std::move(arg));
  }
  command.args.push_back(file.string());
  SupervisionLimits limits = limitsFor(seq, deadline, std::move(kindDeadlines), stacks);
  if (!plantedHang.empty()) limits.knownFaults.push_back(plantedHang);
  if (late) {
    limits.lateDeadline = late->deadline;
    limits.lateDeadlines = late->kinds;
    if (late->at) limits.lateOrdinal = late->at->ordinal;
  }
  limits.environment.emplace_back(kTryVariable, std::to_string(attempt));
  limits.cancel = cancel;
  if (stopRequested()) {
    Supervised stopped;
    stopped.harnessError = kStoppedBeforeStart;
    return stopped;
  }
  if (cancel && cancel->cancelled()) {
    Supervised cancelled;
    cancelled.cancelled = true;
    cancelled.harnessError = kCancelledBeforeStart;
    return cancelled;
  }
  const SlotHold slot(setup_.slots.get());
  struct Device {
    DeviceSpread* spread;
    std::size_t index = 0;
    explicit Device(DeviceSpread* s) : spread(s) {
      if (spread) index = spread->acquire();
    }
    ~Device() {
      if (spread) spread->release(index);
    }
  } device(spread());
  if (device.spread) {
    limits.environment.emplace_back(device.spread->variable(), device.spread->value(device.index));
  }
  ++executions_;
  Supervised run =
      setup_.sanitizer.tool != SanitizerTool::None
          ? superviseUnderSanitizer(command, limits, setup_.sanitizer,
                                    file.string() + ".sanitizer.log", firstContextDestroy(seq))
          : supervise(command, limits);
  countCalls(run.calls);
  return run;
}

void TrialRunner::countCalls(const RuntimeCalls& calls) {
  calls_.fetch_add(calls.calls, std::memory_order_relaxed);
  overlapped_.fetch_add(calls.overlapped, std::memory_order_relaxed);
}

std::string TrialRunner::childrenByGpu() const {
  const DeviceSpread* s = spread();
  return s ? s->startedText() : std::string();
}

DeviceSpread* TrialRunner::spread() const {
  return setup_.devices && setup_.devices->size() > 1 ? setup_.devices.get() : nullptr;
}

std::filesystem::path TrialRunner::childFile(std::string_view stem) const {
  // Unique across every runner of the process: runners share a work directory.
  static std::atomic<uint64_t> counter{0};
  return setup_.workDir /
         (std::string(stem) + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
}

std::filesystem::path TrialRunner::writeSequenceFile(const Sequence& seq) const {
  auto file = childFile("trial");
  file += ".seq";
  Sequence bare;
  bare.ops = seq.ops;
  bare.model = seq.model;
  bare.directives.model = childModelDirective(setup_.workDir, seq.lifecycle());
  // A threaded sequence's schedules are drawn from its seed and the try (ThreadLanes.h).
  bare.directives.seed = seq.directives.seed;
  if (!setup_.target.empty()) {
    // A target learns the policy and the plan from the file (the runner from its arguments).
    bare.directives.policy = std::string(policyName(setup_.policy));
    bare.directives.faults = setup_.faults;
  }
  writeScratchFile(file, printSequence(bare));
  return file;
}

DeadlineCalibrator::ByKind TrialRunner::kindDeadlines(Millis deadline) const {
  DeadlineCalibrator::ByKind kinds = deadlines_.kindDeadlines();
  std::lock_guard lock(kindsMutex_);
  for (const RunOutcome& kind : confirmedKinds_) {
    // A planted kind's rule may fire in any operation: the supervisor shortens the one it
    // fires in (SupervisionLimits::knownFaults).
    if (kind.fault.empty())
      kinds[kind.op] = std::max(Millis{1}, deadlineOf(kinds, kind.op, deadline) / 4);
  }
  return kinds;
}

PersistentRuns::PersistentRuns(unsigned maxSequences) : max_(std::max(maxSequences, 1U)) {}

PersistentRuns::~PersistentRuns() {
  endProcess();
}

void PersistentRuns::endProcess() {
  if (child_) child_->end();
  history_.clear();
  if (spread_ && device_) spread_->release(*device_);
  device_.reset();
}

TrialResult TrialRunner::runPersistent(PersistentRuns& runs, const Sequence& seq, bool stacks) {
  TrialResult result;
  if (stopRequested()) {
    result.harnessError = result.evidence.harnessError = kStoppedBeforeStart;
    return result;
  }
  const auto file = writeSequenceFile(seq);
  const Millis deadline = deadlines_.deadline();
  SupervisionLimits limits = limitsFor(seq, deadline, kindDeadlines(deadline), stacks);
  if (!runs.child_) {
    runs.child_ =
        std::make_unique<PersistentChild>(childCommand(), childFile("persistent"), runs.max_);
  }
  // A process starts now: it keeps its GPU for its life (endProcess gives it back).
  if (runs.child_->sequencesRun() == 0 && (runs.spread_ = spread()) && !runs.device_) {
    runs.device_ = runs.spread_->acquire();
  }
  if (runs.device_) {
    limits.environment.emplace_back(runs.spread_->variable(), runs.spread_->value(*runs.device_));
  }
  {
    const SlotHold slot(setup_.slots.get());
    ++executions_;
    result.executions = 1;
    result.evidence = runs.child_->run(file.string(), limits);
    countCalls(result.evidence.calls);
  }
  result.outcome = result.evidence.outcome;
  result.harnessError = result.evidence.harnessError;
  const bool passed =
      result.outcome.cls == OutcomeClass::Pass && !result.harnessError && !result.evidence.stuck;
  if (passed) {
    for (const OpTiming& t : result.evidence.timings)
      deadlines_.observe(t.op, t.elapsed);
    runs.history_.push_back(Sequence{});
    runs.history_.back().ops = seq.ops;
    runs.history_.back().model = seq.model;
  } else {
    result.before = std::move(runs.history_);
  }
  if (runs.child_->sequencesRun() == 0) runs.endProcess();  // its process has ended
  std::error_code ignored;
  std::filesystem::remove(file, ignored);
  return result;
}

TrialResult TrialRunner::run(const Sequence& seq, TrialMode mode, std::optional<Millis> stuckAfter,
                             uint64_t attempt, const std::string& plantedHang, RunCancel* cancel) {
  const auto file = writeSequenceFile(seq);

  TrialResult result;
  result.attempt = attempt;
  Millis deadline = deadlines_.deadline();
  DeadlineCalibrator::ByKind kinds = kindDeadlines(deadline);
  if (stuckAfter) {
    deadline = std::min(deadline, *stuckAfter);
    for (auto& [op, limit] : kinds)
      limit = std::min(limit, *stuckAfter);
  }
  // A target has no crash handler of the runner's: when it crashes, the supervisor runs it again
  // under a debugger for its frames (Supervisor.h), if asked for stacks.
  const bool targetFrames = mode == TrialMode::Evidence && !setup_.target.empty();
  result.evidence = runOnce(file, seq, deadline, kinds, targetFrames, attempt, plantedHang, cancel);
  const auto& notStarted = result.evidence.harnessError;
  result.executions =
      notStarted == kStoppedBeforeStart || notStarted == kCancelledBeforeStart ? 0 : 1;
  const bool known = result.evidence.stuck && isConfirmedKind(result.evidence.outcome);
  if (known && mode == TrialMode::Evidence && setup_.captureStacks) {
    result.evidence = runOnce(file, seq, deadline, kinds, true, attempt, {},
                              cancel);  // the same, with its stacks
    result.executions = 2;
  }
  if (known && mode != TrialMode::Quick) ++confirmationsSkipped_;
  if (!result.evidence.stuck || mode == TrialMode::Quick || result.evidence.harnessError ||
      isConfirmedKind(result.evidence.outcome)) {
    result.outcome = result.evidence.outcome;
  } else {
    ++longConfirmations_;
    const Supervised first = std::move(result.evidence);
    const DeadlineCalibrator::ByKind longer = deadlines_.kindConfirmationDeadlines();
    const Millis longerDefault = deadlines_.confirmationDeadline();
    // A hang or spin a plan's rule planted in the stuck operation never returns: its
    // confirmation ends a tenth of the long deadline after the rule fires again
    // (SupervisionLimits::knownFaults), not after all of it. Other misses wait it out.
    // The runner writes its own stacks in milliseconds: taken in the confirmation itself once
    // the operation passes the first run's deadline, a slow has the stacks of the run that was
    // slow. A target's need a debugger, which would attach twice to each hang: one more run.
    const bool evidence = mode == TrialMode::Evidence;
    const LateAfter late{deadline, kinds, first.outcome.at};
    const bool lateHere = evidence && setup_.captureStacks && setup_.target.empty();
    result.evidence = runOnce(file, seq, longerDefault, longer, evidence, attempt,
                              first.outcome.fault, cancel, lateHere ? &late : nullptr);
    result.executions = 2;
    result.outcome = result.evidence.outcome;
    if (!result.evidence.stuck && !result.evidence.harnessError &&
        result.evidence.outcome.cls == OutcomeClass::Pass) {
      // Finished under the long deadline: slow if the operation the first run was stuck in
      // again took longer than the deadline, otherwise the first miss was noise. A run that
      // failed otherwise is that failure: a slow is a pass past its budget.
      for (const OpTiming& t : result.evidence.timings) {
        const Millis applied = deadlineOf(kinds, t.op, deadline);
        if (!first.outcome.at || !(t.at == *first.outcome.at) || t.elapsed <= applied) continue;
        result.outcome =
            RunOutcome{OutcomeClass::Slow,
                       t.at,
                       t.op,
                       "took " + millisText(t.elapsed) + ", deadline " +
                           std::to_string(applied.count()) + " ms; finished under " +
                           std::to_string(deadlineOf(longer, t.op, longerDefault).count()) + " ms",
                       {}};
        result.outcome.fault = plantedBy(result.outcome, result.evidence.faults);
      }
      if (result.outcome.cls == OutcomeClass::Slow && lateHere) {
        result.evidence.stacks = result.evidence.lateStacks;
      } else if (result.outcome.cls == OutcomeClass::Slow && evidence && setup_.captureStacks) {
        // A slow operation finishes, so no stuck run took its stacks: one more run takes them
        // once it passes the first run's deadline, and lets it finish: where its time went.
        const Supervised again = runOnce(file, seq, longerDefault, longer, true, attempt,
                                         first.outcome.fault, cancel, &late);
        ++result.executions;
        if (!again.stuck && !again.harnessError && again.outcome.cls == OutcomeClass::Pass)
          result.evidence.stacks = again.lateStacks;
      }
    }
  }
  result.harnessError = result.evidence.harnessError;
  if (result.outcome.cls == OutcomeClass::Pass && !result.harnessError) {
    for (const OpTiming& t : result.evidence.timings)
      deadlines_.observe(t.op, t.elapsed);
  }
  std::error_code ignored;
  std::filesystem::remove(file, ignored);
  return result;
}

TrialResult TrialRunner::runTries(const Sequence& seq, TrialMode mode,
                                  std::optional<Millis> stuckAfter, uint32_t tries,
                                  const std::function<bool(const TrialResult&)>& decided,
                                  uint64_t firstAttempt, const std::string& plantedHang,
                                  RunCancel* cancel) {
  TrialResult t;
  uint32_t executions = 0;
  for (uint32_t k = 0; k < std::max<uint32_t>(tries, 1); ++k) {
    t = run(seq, mode, stuckAfter, firstAttempt + k, plantedHang, cancel);
    executions += t.executions;
    if (t.harnessError || decided(t)) break;
  }
  t.executions = executions;
  return t;
}

void TrialRunner::markConfirmedKind(const RunOutcome& failure) {
  if (failure.cls != OutcomeClass::Hang && failure.cls != OutcomeClass::Spin) return;
  std::lock_guard lock(kindsMutex_);
  if (!isConfirmedKindLocked(failure)) confirmedKinds_.push_back(failure);
}

bool TrialRunner::isConfirmedKind(const RunOutcome& outcome) const {
  std::lock_guard lock(kindsMutex_);
  return isConfirmedKindLocked(outcome);
}

bool TrialRunner::isConfirmedKindLocked(const RunOutcome& outcome) const {
  const std::string kind = failureKind(outcome);
  return std::any_of(confirmedKinds_.begin(), confirmedKinds_.end(),
                     [&](const RunOutcome& k) { return failureKind(k) == kind; });
}

void TrialRunner::stopAt(std::chrono::steady_clock::time_point when) {
  stopAt_ = when.time_since_epoch().count();
}

void TrialRunner::shrinkUntil(std::chrono::steady_clock::time_point when) {
  shrinkUntil_ = when.time_since_epoch().count();
}

bool TrialRunner::shrinkClosed() const {
  return stopRequested() ||
         std::chrono::steady_clock::now().time_since_epoch().count() >= shrinkUntil_.load();
}

bool TrialRunner::stopRequested() const {
  if (setup_.stopRequested && setup_.stopRequested()) return true;
  return std::chrono::steady_clock::now().time_since_epoch().count() >= stopAt_.load();
}

}  // namespace gpufuzz
