// Session.h: what every gpufuzz subcommand sets up before it runs children: the backend (auto
// resolved once, in this process, which also keeps the CUDA driver initialised for the
// children's sake), the runner's path, a private work directory, the deadline calibrator, the
// number of jobs, and the Ctrl-C / SIGTERM handling that kills every child and asks the
// subcommand to stop.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/base/RunConfig.h"
#include "harness/base/TargetCommand.h"
#include "harness/cli/CommandLine.h"
#include "harness/search/Trial.h"
#include "harness/supervise/Deadline.h"
#include "model/LifecycleModel.h"
#include "renderer/device/Backend.h"

namespace gpufuzz {

/// The most children a campaign runs by default on `backend` (as its probe described it, over
/// `gpus` GPUs, with `persistent` sequences a process) where the driver makes children wait for
/// each other: cuda and NVIDIA's OpenCL (each context a sequence makes is a CUDA context), and
/// cuda-async in fresh processes (each starts CUDA). None: as many as cores.
std::optional<unsigned> driverContextJobs(std::string_view backend, std::string_view description,
                                          int gpus, unsigned persistent = 1);

/// --device-memory (docs/failures.md) on `backend`: InputError where the backend cannot bound its
/// device memory, a target included.
void checkDeviceMemory(const BackendOptions& options, const std::string& backend);

/// The words --inject names (docs/failures.md): none, all, or words joined by commas. `all` is
/// every word the backend can give that `model` declares (any model's, without one); a word
/// named is refused, InputError, when the backend cannot give it or no operation declares it.
/// A target is the judge of its own words: it answers what it cannot honour.
FailWords injectedWords(const std::string& text, const std::string& backend,
                        const LifecycleModel* model);

class Session {
 public:
  /// Throws InputError for bad options, DeviceUnavailable when cuda is asked for and unusable.
  explicit Session(const CommandLine& cl);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const CommandLine& commandLine() const { return cl_; }
  /// --model (or, for fuzz, --ops), resolved and checked; null when neither is given: a file's
  /// `# model:`, else `all`, holds.
  const LifecycleModel* model() const { return model_; }
  /// The model generated sequences are of: model(), else the built-in `renderer`.
  const LifecycleModel& fuzzModel() const;
  /// InputError when the project's runner cannot execute `model` and no target is given: a
  /// model is executed by a target or by a backend that implements it (docs/models.md). A
  /// runtime model runs on its backends' executors only, where no fault plan acts.
  void checkExecutable(const LifecycleModel& model, const TargetCommand* target,
                       const std::string& backend, const std::string& faults) const;
  /// The backend asked for a run of `model`: `requested`, but `auto` means the runtime model's
  /// own backend (opencl for `opencl`).
  std::string backendRequest(const std::string& requested, const LifecycleModel& model) const;

  /// --jobs; by default the number of cores, or fewer once the backend resolved to one where the
  /// driver makes children wait for each other (driverContextJobs: 2 per GPU on cuda and NVIDIA's
  /// OpenCL, 4 on cuda-async in fresh processes).
  unsigned jobs() const { return jobs_; }
  /// How many fresh children a shrink, its confirmations and an explanation run at once: jobs(),
  /// but with --persistent N > 1 no more than the backend's cap for fresh children, since its
  /// workers' cap is lifted. The driver starts fresh cuda-async processes one at a time for a
  /// whole GPU, so 16 candidates at once would wait seconds a round to start (bench/RESULTS.md,
  /// "The seed's hang on cuda-async").
  unsigned freshJobs() const { return std::min(jobs_, freshJobsCap_.value_or(jobs_)); }
  bool quiet() const { return cl_.value<Option::Quiet>(); }
  /// --persistent N: sequences a child may run in one process.
  unsigned persistent() const { return static_cast<unsigned>(cl_.value<Option::Persistent>()); }

  /// The backend that runs for a requested name: "auto" becomes the first usable of
  /// autoBackends() (cuda, else sim); any other name of the registry stays itself once it is
  /// known to be usable (DeviceUnavailable otherwise). Its profile caps the default --jobs. A
  /// backend that must not be loaded in a process that forks (OpenCL, Vulkan) is checked by a
  /// runner started for that (`gpufuzz-runner --probe`).
  std::string resolveBackend(const std::string& requested);
  /// What a resolved backend runs on (platform, device, driver), as its probe reported it.
  std::string backendDescription(const std::string& backend) const;
  /// --device and --validation.
  const BackendOptions& backendOptions() const { return backendOptions_; }
  std::optional<ScheduleMode> schedule() const { return schedule_; }
  /// --sanitizer, as read and checked with the command line.
  const SanitizerSetup& sanitizer() const { return sanitizer_; }

  /// A trial runner for one configuration; runners are kept and shared (one calibrator per
  /// backend and model), so asking twice for the same configuration gives the same runner. `model`
  /// names the sequences' model, whose operations may need longer deadlines. With `target`,
  /// its children are that program (docs/target.md) and `backend` is "target"; the first runner of
  /// a target checks that it passes an empty sequence (DeviceUnavailable when it does not).
  TrialRunner& trials(const std::string& backend, TeardownPolicy policy, const std::string& faults,
                      const TargetCommand* target = nullptr, std::string_view model = {});

  /// --target, resolved; null without it.
  const TargetCommand* commandLineTarget();
  /// A target's command line (from --target or a file's `target` directive) split, its program
  /// found (PATH for a bare name), words that name existing paths made absolute, its --version
  /// asked. InputError (naming `what`) when it does not split or the program is missing.
  const TargetCommand& resolveTarget(const std::string& text, const std::string& what);
  /// The name a target's runs go by where a backend's would ("target").
  static constexpr const char* kTargetBackend = "target";

  /// What one sequence file runs under: the command line over its directives, the backend
  /// resolved, and the trial runner for that configuration.
  struct FileRun {
    RunConfig config;
    std::string backend;
    TrialRunner* trials = nullptr;
  };
  FileRun forFile(const Sequence& seq, const std::string& file);
  /// A file of the command line, read and checked, with what it runs on.
  struct PlannedFile {
    std::string file;
    Sequence seq;
    FileRun run;
  };
  /// Every file of the command line, each read and checked before anything runs: bad input
  /// means nothing ran.
  std::vector<PlannedFile> planFiles();
  /// The target a file runs with: --target, else its `target` directive; null for the runner.
  const TargetCommand* targetFor(const Sequence& seq, const std::string& file);

  /// Set once SIGINT or SIGTERM arrived; every child has been killed by then.
  static bool stopRequested();

 private:
  std::string probeInChild(const std::string& backend);
  /// Lowers the default --jobs to `most` (never an explicit one).
  void capDefaultJobs(unsigned most);

  const CommandLine& cl_;
  const LifecycleModel* model_ = nullptr;
  unsigned jobs_;
  std::optional<unsigned> freshJobsCap_;  // driverContextJobs for fresh children, if any
  std::filesystem::path workDir_;
  std::string runner_;
  BackendOptions backendOptions_;
  std::optional<ScheduleMode> schedule_;  // --schedule
  SanitizerSetup sanitizer_;
  std::shared_ptr<ChildSlots> slots_;
  std::shared_ptr<DeviceSpread> devices_;  // the GPUs children are spread over (the profile's)
  /// The same for backends that pick their GPU by GPUFUZZ_DEVICE_INDEX (BackendProfile::Spread).
  std::shared_ptr<DeviceSpread> indexDevices_;
  std::map<std::string, std::string> resolved_;
  std::map<std::string, std::string> descriptions_;
  /// In-process backends, held for the session: each keeps its runtime (the CUDA driver)
  /// initialised for the children's sake.
  std::vector<std::unique_ptr<Backend>> held_;
  std::map<std::string, std::unique_ptr<DeadlineCalibrator>> calibrators_;
  std::map<std::string, std::unique_ptr<TrialRunner>> runners_;
  std::map<std::string, TargetCommand> targets_;  // by the text they were resolved from
};

}  // namespace gpufuzz
