// Trial.h: one sequence tried in a child process under the calibrated deadline, with a first
// deadline miss confirmed by a re-run under a much longer one (as AFL++ does): still stuck is a
// hang or a spin, finished late is slow, finished in time was noise and the re-run's outcome
// stands. Thread-safe: a campaign's workers share one TrialRunner.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/base/RunConfig.h"
#include "harness/base/RunOutcome.h"
#include "harness/base/TargetCommand.h"
#include "harness/supervise/ComputeSanitizer.h"
#include "harness/supervise/Deadline.h"
#include "harness/supervise/RunCancel.h"
#include "harness/supervise/Supervisor.h"
#include "model/Sequence.h"
#include "renderer/TeardownPolicy.h"

namespace gpufuzz {

/// The children a session may run at once (--jobs), shared by all its trial runners.
class ChildSlots {
 public:
  explicit ChildSlots(unsigned count) : semaphore_(static_cast<std::ptrdiff_t>(count)) {}
  void acquire() { semaphore_.acquire(); }
  void release() { semaphore_.release(); }

 private:
  std::counting_semaphore<1 << 20> semaphore_;
};

/// The GPUs a session's children are spread over: each child gets the device with the fewest
/// children running on it now (ties: the lowest index), by one environment variable:
/// - CUDA_VISIBLE_DEVICES: its device first, then the others in order, so that its device 0 is
///   the chosen one and a model that crosses devices (cuda-driver's device=) still reaches them;
/// - GPUFUZZ_DEVICE_INDEX (kDeviceIndexVariable): its device's index, for backends that pick
///   their GPU by it (NVIDIA's OpenCL and Vulkan).
class DeviceSpread {
 public:
  /// `devices`: the devices' names, one per device (CUDA ordinals or UUIDs; or indexes).
  explicit DeviceSpread(std::vector<std::string> devices,
                        std::string variable = "CUDA_VISIBLE_DEVICES");
  /// The devices of this machine as the harness sees them: the entries of its own
  /// CUDA_VISIBLE_DEVICES when set, else 0..count-1.
  static std::vector<std::string> visibleDevices(int count, const char* cudaVisibleDevices);

  /// Takes the least busy device; give its index back with release().
  std::size_t acquire();
  void release(std::size_t index);
  const std::string& device(std::size_t index) const { return devices_[index]; }
  std::size_t size() const { return devices_.size(); }
  /// The variable a child is given, and its value for device `index`.
  const std::string& variable() const { return variable_; }
  std::string value(std::size_t index) const;
  /// Children started on each device so far: "0: 12, 1: 11" (the campaign's stats.json).
  std::string startedText() const;

 private:
  std::vector<std::string> devices_;
  std::string variable_;
  mutable std::mutex mutex_;
  std::vector<unsigned> running_;
  std::vector<uint64_t> started_;
};

struct TrialSetup {
  std::string runner;  // the gpufuzz-runner executable
  /// --target: the program run instead of the runner (docs/target.md), as `WORDS... FILE`, its FILE
  /// carrying the policy and faults as directives; empty: the runner.
  TargetCommand target;
  std::string backend;            // a backend of the registry (resolved, not auto)
  BackendOptions backendOptions;  // --device, --validation: passed on to the runner
  /// --schedule: passed on to the runner; unset, the file's, else mix.
  std::optional<ScheduleMode> schedule;
  /// --sanitizer: every child under compute-sanitizer, as a fresh process (ComputeSanitizer.h).
  SanitizerSetup sanitizer;
  TeardownPolicy policy = TeardownPolicy::Shipped;
  std::string faults;             // a built-in plan name or a path
  std::filesystem::path workDir;  // where sequence files for children are written
  /// Whether Evidence trials capture stacks; --no-stacks turns it off.
  bool captureStacks = true;
  /// Children are forks of a runner started once (ForkServer.h); --no-fork-server starts a
  /// fresh runner for every run.
  bool forkServer = true;
  std::vector<std::pair<std::string, std::string>> environment;
  /// A target's variables from its start: LD_PRELOAD of the interposer (docs/failures.md).
  std::vector<std::pair<std::string, std::string>> startEnvironment;
  /// Bounds the children running at once; none means unbounded.
  std::shared_ptr<ChildSlots> slots;
  /// Several GPUs: children are spread over them; none (or one device): no override.
  std::shared_ptr<DeviceSpread> devices;
  /// Once this says stop, no new child starts (the run reports a harness error instead).
  std::function<bool()> stopRequested;
};

struct TrialResult {
  RunOutcome outcome;
  /// The run the outcome was classified from (the confirmation when there was one).
  Supervised evidence;
  /// How many children this trial started (1, or 2 with a confirmation).
  uint32_t executions = 0;
  /// The try it ran as (TrialRunner::run's `attempt`): a threaded sequence's schedule.
  uint64_t attempt = 0;
  /// Set when the harness, not the system under test, failed.
  std::optional<std::string> harnessError;
  /// A persistent run (runPersistent) that did not pass: the sequences its process had passed
  /// before it, oldest first (what the failure may need).
  std::vector<Sequence> before;
};

/// --persistent N: one worker's child that runs up to N sequences in one process
/// (PersistentChild), and what that process has run so far. One per worker; not shared.
class PersistentRuns {
 public:
  explicit PersistentRuns(unsigned maxSequences);
  ~PersistentRuns();
  PersistentRuns(const PersistentRuns&) = delete;
  PersistentRuns& operator=(const PersistentRuns&) = delete;
  /// Sequences the running process has passed so far.
  std::size_t historySize() const { return history_.size(); }

 private:
  friend class TrialRunner;
  void endProcess();

  unsigned max_;
  std::unique_ptr<PersistentChild> child_;
  std::vector<Sequence> history_;
  DeviceSpread* spread_ = nullptr;
  std::optional<std::size_t> device_;  // the GPU the running process was given
};

/// How thoroughly a trial classifies a deadline miss.
enum class TrialMode : uint8_t {
  /// A stuck run is a hang or a spin at once (fuzzing and shrinking: cheap).
  Quick,
  /// A stuck run is re-run under the confirmation deadline: hang/spin, slow, or noise.
  Confirmed,
  /// Confirmed, and the stacks of a child still stuck are captured (what findings keep); a
  /// target that crashed is run again under a debugger for its frames (the runner's own come
  /// with every crash).
  Evidence,
};

class TrialRunner {
 public:
  TrialRunner(TrialSetup setup, DeadlineCalibrator& deadlines);

  /// With `stuckAfter`, no operation may go longer than that without progress (every deadline
  /// lowered to it): for runs that matter only if they finish, such as a shrink's candidates
  /// of a crash or an error.
  /// `attempt`: which try of a threaded sequence this is (docs/sequences.md, Threads): the runner's
  /// `--try`, which seeds the threads' schedule on sim.
  /// `plantedHang`: a fault-plan rule (as cited) whose hang or spin this run looks for, as a
  /// shrink's candidates do: an operation in which it fires is stuck after a tenth of its
  /// deadline (SupervisionLimits::knownFaults), since the rule's call never returns.
  /// `cancel`: once cancelled, the run's child is killed, or none starts (RunCancel.h); the
  /// result is then a harness error with `evidence.cancelled`.
  TrialResult run(const Sequence& seq, TrialMode mode,
                  std::optional<Millis> stuckAfter = std::nullopt, uint64_t attempt = 0,
                  const std::string& plantedHang = {}, RunCancel* cancel = nullptr);
  /// Up to `tries` runs of `seq` as tries firstAttempt, firstAttempt + 1, ... (each its own
  /// schedule, for a threaded sequence), until `decided` holds for one or the harness fails:
  /// that run, its `attempt` the try it was, its executions those of every try.
  TrialResult runTries(const Sequence& seq, TrialMode mode, std::optional<Millis> stuckAfter,
                       uint32_t tries, const std::function<bool(const TrialResult&)>& decided,
                       uint64_t firstAttempt = 0, const std::string& plantedHang = {},
                       RunCancel* cancel = nullptr);
  /// The sequence in the worker's persistent child (--persistent): classified as a Quick run;
  /// anything but a pass ends that process, and its result carries the sequences the process
  /// ran before (TrialResult::before). Only for the project's runner without a sanitizer.
  /// `stacks`: a stuck child's stacks are taken before it is killed.
  TrialResult runPersistent(PersistentRuns& runs, const Sequence& seq, bool stacks = false);

  const TrialSetup& setup() const { return setup_; }
  /// How many tries an edit of a threaded failure `candidate` needs to be told apart at `tries`
  /// per schedule: `tries` when it has threads, or on a backend where timing decides (every
  /// real one); 1 on one thread on sim, which runs it the same way every time.
  uint32_t triesFor(const Sequence& candidate, uint32_t tries) const {
    const BackendProfile* profile = findBackendProfile(setup_.backend);  // none for a target
    return candidate.threadCount() > 1 || !profile || !profile->deterministic ? tries : 1;
  }
  DeadlineCalibrator& deadlines() { return deadlines_; }
  uint64_t executions() const { return executions_.load(); }
  /// Runtime calls the runs made, and those that overlapped another thread's (`calls` events).
  RuntimeCalls calls() const { return {calls_.load(), overlapped_.load()}; }

  /// A failure kind (failureKind(): a hang or spin at a kind of operation, or planted by a
  /// fault-plan rule) confirmed as a finding: from now on a run stuck that way is taken as it
  /// is, without the long confirmation, and operations of that kind (or in which that rule
  /// fired) are stuck after a quarter of their deadline (a tenth for a rule, whose call never
  /// returns: SupervisionLimits::knownFaults): a known hang is not waited out in full. Anything
  /// else stuck keeps the full deadline and its confirmation.
  void markConfirmedKind(const RunOutcome& failure);
  bool isConfirmedKind(const RunOutcome& outcome) const;
  /// Long confirmations run, and deadline misses taken without one (of a confirmed kind).
  uint64_t longConfirmations() const { return longConfirmations_.load(); }
  uint64_t confirmationsSkipped() const { return confirmationsSkipped_.load(); }
  /// Counts a Quick miss that its caller takes without confirming it (a confirmed kind).
  void countSkippedConfirmation() { ++confirmationsSkipped_; }
  /// Stops new children from `when` on, as a stop request does (a campaign's time and grace).
  void stopAt(std::chrono::steady_clock::time_point when);
  bool stopRequested() const;
  /// Shrinks end with their best so far from `when` on, so that what is left until stopAt
  /// confirms them: a shrink cut short there is still confirmed, one cut by the stop is not.
  void shrinkUntil(std::chrono::steady_clock::time_point when);
  /// A stop requested, or the shrink window closed.
  bool shrinkClosed() const;
  /// Children started on each GPU (DeviceSpread::startedText); empty with one GPU or none.
  std::string childrenByGpu() const;

 private:
  /// The deadlines past which a long confirmation takes its child's stacks once, and lets it go
  /// on (SupervisionLimits::lateDeadline): the first run's.
  struct LateAfter {
    Millis deadline;
    DeadlineCalibrator::ByKind kinds;
    std::optional<At> at;  // the operation the first run was late in
  };
  /// One child; `plantedHang`, a rule whose hang or spin is known here too (knownFaults).
  Supervised runOnce(const std::filesystem::path& file, const Sequence& seq, Millis deadline,
                     DeadlineCalibrator::ByKind kindDeadlines, bool stacks, uint64_t attempt,
                     const std::string& plantedHang = {}, RunCancel* cancel = nullptr,
                     const LateAfter* late = nullptr);
  /// The child's command line, without its sequence file.
  ChildCommand childCommand() const;
  SupervisionLimits limitsFor(const Sequence& seq, Millis deadline,
                              DeadlineCalibrator::ByKind kindDeadlines, bool stacks) const;
  bool isConfirmedKindLocked(const RunOutcome& outcome) const;  // kindsMutex_ held
  /// The session's per-operation deadlines now, a confirmed kind's shortened.
  DeadlineCalibrator::ByKind kindDeadlines(Millis deadline) const;
  std::filesystem::path childFile(std::string_view stem) const;
  /// The sequence as a child reads it: its operations, and for a target the policy and plan.
  std::filesystem::path writeSequenceFile(const Sequence& seq) const;
  /// The spread of GPUs when there are several, else null.
  DeviceSpread* spread() const;

  TrialSetup setup_;
  DeadlineCalibrator& deadlines_;
  std::atomic<uint64_t> executions_{0};
  std::atomic<uint64_t> calls_{0}, overlapped_{0};
  void countCalls(const RuntimeCalls& calls);
  std::atomic<uint64_t> longConfirmations_{0}, confirmationsSkipped_{0};
  mutable std::mutex kindsMutex_;
  std::vector<RunOutcome> confirmedKinds_;  // one of each failureKind()
  std::atomic<std::chrono::steady_clock::rep> stopAt_{
      std::chrono::steady_clock::time_point::max().time_since_epoch().count()};
  std::atomic<std::chrono::steady_clock::rep> shrinkUntil_{
      std::chrono::steady_clock::time_point::max().time_since_epoch().count()};
};

/// The directory of the running executable (where gpufuzz-runner and plans/ live).
std::filesystem::path executableDir();

}  // namespace gpufuzz
