// Session.cpp: shared set-up of the subcommands.
#include "harness/cli/Session.h"

#include "model/renderer/ReferenceModel.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "base/InputError.h"
#include "harness/base/ExitStatus.h"
#include "harness/base/ScratchFolder.h"
#include "harness/protocol/RunnerCommandLine.h"
#include "harness/supervise/ChildProcess.h"
#include "renderer/Backends.h"
#include "renderer/Text.h"
#include "renderer/device/DeviceError.h"
#include "renderer/device/DeviceIndex.h"
#include "renderer/faults/FaultPlan.h"

namespace gpufuzz {

std::optional<unsigned> driverContextJobs(std::string_view backend, std::string_view description,
                                          int gpus, unsigned persistent) {
  // More children than the driver makes contexts for only stretch every operation's latency,
  // and the automatic deadlines with it (the profile says where, Backends.cpp).
  const BackendProfile* profile = findBackendProfile(backend);
  if (profile == nullptr || profile->jobsPerDevice == 0) return std::nullopt;
  if (!profile->jobsOnlyOn.empty() && !containsIgnoringCase(description, profile->jobsOnlyOn)) {
    return std::nullopt;
  }
  if (profile->jobsFreshOnly && persistent > 1) return std::nullopt;
  return profile->jobsPerDevice * static_cast<unsigned>(std::max(gpus, 1));
}

namespace {

std::atomic<int> gSignals{0};

extern "C" void onStopSignal(int) {
  if (gSignals.fetch_add(1) > 0) _exit(130);  // a second Ctrl-C: leave at once
  killAllChildren();
}

void installStopHandlers() {
  struct sigaction sa {};
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

}  // namespace

namespace {

/// "cuda or cuda-async": the backends compute-sanitizer checks.
std::string sanitizerBackendsText() {
  std::vector<std::string> names;
  for (const BackendInfo& info : backendRegistry()) {
    if (info.profile.sanitizer) names.emplace_back(info.name);
  }
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i)
    text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return text;
}

/// The --sanitizer setting, or DeviceUnavailable (exit 2) where compute-sanitizer is missing.
SanitizerSetup sanitizerFor(const std::string& option) {
  SanitizerSetup setup;
  setup.tool = parseSanitizerOption(option);
  if (setup.tool == SanitizerTool::None) return setup;
  std::optional<std::string> path = findComputeSanitizer();
  if (!path) {
    throw DeviceUnavailable("--sanitizer " + option +
                            ": compute-sanitizer not found ($GPUFUZZ_COMPUTE_SANITIZER, PATH, "
                            "$CUDA_HOME/bin, /usr/local/cuda/bin); install the CUDA toolkit's "
                            "compute-sanitizer or use --sanitizer none");
  }
  setup.path = *path;
  return setup;
}

}  // namespace

bool Session::stopRequested() {
  return gSignals.load() > 0;
}

Session::Session(const CommandLine& cl) : cl_(cl) {
  if (const auto model = cl.value<Option::Model>()) {
    if (cl.has(Option::Ops)) {
      throw InputError("--ops " + cl.value<Option::Ops>() + " and --model " + *model +
                       ": --ops names a built-in model, so give one of them");
    }
    model_ = &resolveModel(*model);
  } else if (cl.has(Option::Ops)) {
    model_ = &builtinModel(cl.value<Option::Ops>());
  }
  const unsigned cores = std::max(1U, std::thread::hardware_concurrency());
  jobs_ = static_cast<unsigned>(cl.value<Option::Jobs>().value_or(cores));
  backendOptions_.device = cl.value<Option::Device>().value_or("");
  if (const auto validation = cl.value<Option::Validation>()) {
    backendOptions_.validation = *validation == "on";
  }
  backendOptions_.deviceMemory = cl.value<Option::DeviceMemory>();
  if (const auto schedule = cl.value<Option::Schedule>()) schedule_ = scheduleModeOf(*schedule);
  if (cl.has(Option::Target)) {
    for (const Option o : {Option::Backend, Option::Device, Option::Validation, Option::Sanitizer,
                           Option::DeviceMemory}) {
      if (cl.has(o)) {
        throw InputError(std::string(optionFlag(o)) +
                         " chooses among gpufuzz's own backends; with --target the program "
                         "named is the backend (give it its own arguments in --target)");
      }
    }
  }
  sanitizer_ = sanitizerFor(cl.value<Option::Sanitizer>());
  runner_ = (executableDir() / kRunnerProgram).string();
  if (::access(runner_.c_str(), X_OK) != 0) {
    throw std::runtime_error("cannot find the runner next to gpufuzz: " + runner_);
  }
  // The sequence files of the children (ScratchFolder.h).
  std::string pattern = (scratchFolder() / "gpufuzz-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("cannot create a work directory like " + pattern + ": " +
                             std::strerror(errno));
  }
  workDir_ = pattern;
  slots_ = std::make_shared<ChildSlots>(jobs_);
  installStopHandlers();
}

const LifecycleModel& Session::fuzzModel() const {
  return model_ ? *model_ : builtinModel(cl_.value<Option::Ops>());
}

namespace {

/// InputError unless `backend` executes the runtime model `model`.
void requireRunsModel(const std::string& backend, const LifecycleModel& model) {
  if (backendRunsModel(backend, model.name)) return;
  throw InputError("model " + model.name + " is not executed by backend " + backend +
                   ": it runs on " + backendsOfModelText(model.name));
}

}  // namespace

void Session::checkExecutable(const LifecycleModel& model, const TargetCommand* target,
                              const std::string& backend, const std::string& faults) const {
  if (target || hasRendererSemantics(model)) return;
  if (model.builtin && isRuntimeModel(model.name)) {
    requireRunsModel(backend, model);
    // Fault plans act at the device seam, which a runtime model's calls do not cross.
    if (faults != "none") {
      throw InputError("--faults " + faults +
                       ": fault plans act at the device seam of the "
                       "renderer's models; model " +
                       model.name + " runs with --faults none");
    }
    return;
  }
  throw InputError("model " + model.name + " (" + model.source + ") is not executed by backend " +
                   backend +
                   ": the project's runner implements the built-in models renderer, device and "
                   "all, and each runtime model on its backends; give a program that implements "
                   "it with --target");
}

void checkDeviceMemory(const BackendOptions& options, const std::string& backend) {
  if (!options.deviceMemory) return;
  const BackendProfile* profile = findBackendProfile(backend);
  if (profile != nullptr && profile->boundsDeviceMemory) return;
  throw InputError("--device-memory " + std::to_string(*options.deviceMemory) + ": backend " +
                   backend + " cannot bound its device memory (failures.md); " +
                   std::string(kBoundedBackends) + " can");
}

std::string Session::backendRequest(const std::string& requested,
                                    const LifecycleModel& model) const {
  if (requested != "auto" || !model.builtin) {
    // A runtime model named with a backend that does not run it is bad input, whether or not
    // that backend's runtime is here: say so before the backend is looked for.
    if (model.builtin && isRuntimeModel(model.name) && findBackendProfile(requested) != nullptr) {
      requireRunsModel(requested, model);
    }
    return requested;
  }
  const std::string_view own = backendForModel(model.name);
  return own.empty() ? requested : std::string(own);
}

Session::~Session() {
  std::error_code ignored;
  std::filesystem::remove_all(workDir_, ignored);
}

std::string Session::backendDescription(const std::string& backend) const {
  const auto it = descriptions_.find(backend);
  return it == descriptions_.end() ? backend : it->second;
}

std::string Session::probeInChild(const std::string& backend) {
  RunnerArgs args;
  args.probe = true;
  args.overrides.backend = backend;
  args.overrides.backendOptions = backendOptions_;
  const ChildCommand probe{runner_, runnerArgs(args)};
  constexpr std::chrono::seconds kProbeLimit{120};
  const CapturedRun r = runCaptured(probe, kProbeLimit, 64 * 1024);
  std::string output = r.output;
  while (!output.empty() && (output.back() == '\n' || output.back() == ' '))
    output.pop_back();
  if (!r.timedOut && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) {
    const size_t tab = output.find('\t');
    return tab == std::string::npos ? backend : output.substr(tab + 1);
  }
  if (!r.timedOut && WIFEXITED(r.status) && WEXITSTATUS(r.status) == kExitBadInput) {
    const std::string prefix = errorLinePrefix(kRunnerProgram);
    if (output.starts_with(prefix)) output.erase(0, prefix.size());
    throw DeviceUnavailable(output);
  }
  throw std::runtime_error(
      "checking the " + backend + " backend in a runner failed (" +
      (r.timedOut ? std::string("no answer in 120 s") : "wait status " + std::to_string(r.status)) +
      "): " + output);
}

std::string Session::resolveBackend(const std::string& requested) {
  if (const auto it = resolved_.find(requested); it != resolved_.end()) return it->second;
  if (requested == "auto") {
    // The first of autoBackends() usable here; the last one's failure is the answer.
    const auto candidates = autoBackends();
    for (std::size_t i = 0; i + 1 < candidates.size(); ++i) {
      try {
        return resolved_[requested] = resolveBackend(std::string(candidates[i]));
      } catch (const DeviceUnavailable&) {
      }
    }
    return resolved_[requested] = resolveBackend(std::string(candidates.back()));
  }
  const BackendInfo& info = backendInfo(requested);  // InputError for an unknown name
  if (info.built && info.probeInChild) {
    descriptions_[requested] = probeInChild(requested);
  } else {
    // Held for the session: keeps the runtime (the CUDA driver) initialised for the children.
    std::unique_ptr<Backend> backend = makeBackend(requested, backendOptions_);
    descriptions_[requested] = backend->description();
    held_.push_back(std::move(backend));
  }
  int gpus = 1;
  using Spread = BackendProfile::Spread;
  if (info.profile.spreadOverGpus == Spread::CudaVisibleDevices) {
    gpus = cudaDeviceCount();
    if (!devices_) {
      devices_ = std::make_shared<DeviceSpread>(
          DeviceSpread::visibleDevices(gpus, std::getenv("CUDA_VISIBLE_DEVICES")));
    }
  } else if (info.profile.spreadOverGpus == Spread::DeviceIndex &&
             containsIgnoringCase(descriptions_[requested], "nvidia")) {
    // NVIDIA's GPUs, counted through the CUDA driver; each child picks its own by index.
    gpus = cudaDeviceCount();
    if (!indexDevices_) {
      std::vector<std::string> indexes;
      for (int i = 0; i < gpus; ++i)
        indexes.push_back(std::to_string(i));
      indexDevices_ = std::make_shared<DeviceSpread>(indexes, kDeviceIndexVariable);
    }
  }
  if (auto most = driverContextJobs(requested, descriptions_[requested], gpus, persistent())) {
    capDefaultJobs(*most);
  }
  freshJobsCap_ = driverContextJobs(requested, descriptions_[requested], gpus, 1);
  if (backendOptions_.deviceMemory && info.profile.spreadOverGpus != Spread::None) {
    // Each child takes its GPU's memory but --device-memory's bytes: a second child on that GPU
    // would find none left, not even for its context (failures.md).
    const unsigned most = static_cast<unsigned>(std::max(gpus, 1));
    if (cl_.has(Option::Jobs) && jobs_ > most) {
      throw InputError("--device-memory with --jobs " + std::to_string(jobs_) +
                       ": each child takes its GPU's memory, so at most one child runs on each of "
                       "the " +
                       std::to_string(most) + " GPU(s)");
    }
    capDefaultJobs(most);
    freshJobsCap_ = most;
  }
  resolved_[requested] = requested;
  return requested;
}

void Session::capDefaultJobs(unsigned most) {
  // An explicit --jobs stands; so do the slots of runners already made.
  if (cl_.has(Option::Jobs) || !runners_.empty() || jobs_ <= most) return;
  jobs_ = most;
  slots_ = std::make_shared<ChildSlots>(jobs_);
}

std::vector<Session::PlannedFile> Session::planFiles() {
  std::vector<PlannedFile> planned;
  for (const std::string& file : cl_.files) {
    Sequence seq = loadSequence(file, model());
    planned.push_back({file, seq, forFile(seq, file)});
  }
  return planned;
}

Session::FileRun Session::forFile(const Sequence& seq, const std::string& file) {
  FileRun run;
  run.config = resolveRunConfig(RunOverrides{cl_.get(Option::Backend), cl_.get(Option::Policy),
                                             cl_.get(Option::Faults), backendOptions_, schedule_},
                                seq.directives, file);
  const TargetCommand* target = targetFor(seq, file);
  run.backend =
      target ? kTargetBackend : resolveBackend(backendRequest(run.config.backend, seq.lifecycle()));
  checkExecutable(seq.lifecycle(), target, run.backend, faultsFor(run.config, run.backend));
  checkDeviceMemory(run.config.backendOptions, run.backend);
  checkFaultPlan(run.config, run.backend, seq, file);
  run.trials = &trials(run.backend, run.config.policy, faultsFor(run.config, run.backend), target,
                       seq.lifecycle().name);
  return run;
}

const TargetCommand* Session::commandLineTarget() {
  if (!cl_.has(Option::Target)) return nullptr;
  return &resolveTarget(*cl_.get(Option::Target), "--target");
}

const TargetCommand* Session::targetFor(const Sequence& seq, const std::string& file) {
  if (cl_.has(Option::Target)) return commandLineTarget();
  if (!seq.directives.target) return nullptr;
  const auto place = seq.directivePlaces.find("target");
  const std::string where = place == seq.directivePlaces.end()
                                ? file + ": target"
                                : file + ":" + std::to_string(place->second.first) + ":" +
                                      std::to_string(place->second.second) + ": target";
  return &resolveTarget(*seq.directives.target, where);
}

const TargetCommand& Session::resolveTarget(const std::string& text, const std::string& what) {
  if (const auto it = targets_.find(text); it != targets_.end()) return it->second;
  TargetCommand target;
  target.words = splitShellWords(text, what);
  std::string& program = target.words.front();
  if (program.find('/') == std::string::npos) {
    const std::optional<std::string> found = findOnPath(program);
    if (!found) throw InputError(what + ": '" + program + "' is not a program on PATH");
    program = *found;
  }
  for (std::string& word : target.words) {
    std::error_code ec;
    if (word.find('/') == std::string::npos || !std::filesystem::exists(word, ec)) continue;
    word = std::filesystem::absolute(word, ec).lexically_normal().string();
  }
  if (::access(program.c_str(), X_OK) != 0) {
    throw InputError(what + ": '" + program + "' is not an executable file");
  }
  ChildCommand version{program, {target.words.begin() + 1, target.words.end()}};
  version.args.emplace_back("--version");
  try {
    const CapturedRun r = runCaptured(version, std::chrono::seconds(10), 4096);
    if (!r.timedOut && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) {
      std::string line = r.output.substr(0, r.output.find('\n'));
      while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
        line.pop_back();
      target.version = line;
    }
  } catch (const ChildStartError& e) {
    throw InputError(what + ": " + e.what());
  }
  return targets_.emplace(text, std::move(target)).first->second;
}

TrialRunner& Session::trials(const std::string& backend, TeardownPolicy policy,
                             const std::string& faults, const TargetCommand* target,
                             std::string_view model) {
  const std::string key = backend + "|" + std::string(policyName(policy)) + "|" + faults +
                          (target ? "|" + target->text() : "") + "|" + std::string(model);
  auto it = runners_.find(key);
  if (it != runners_.end()) return *it->second;
  loadFaultPlan(faults);  // a bad plan is bad input, found here rather than by a child
  auto& calibrator = calibrators_[backend + "|" + std::string(model)];
  if (!calibrator) {
    DeadlineSettings settings = DeadlineSettings::forBackend(backend, model);
    if (const auto ms = cl_.value<Option::Deadline>()) settings.fixed = Millis(*ms);
    if (const auto ms = cl_.value<Option::ConfirmDeadline>()) settings.confirmFixed = Millis(*ms);
    calibrator = std::make_unique<DeadlineCalibrator>(settings);
  }
  TrialSetup setup;
  setup.runner = runner_;
  setup.backend = backend;
  setup.backendOptions = backendOptions_;
  setup.schedule = schedule_;
  const BackendProfile* profile = findBackendProfile(backend);  // none for a target
  if (sanitizer_.tool != SanitizerTool::None) {
    if (profile == nullptr || !profile->sanitizer) {
      throw InputError("--sanitizer " + std::string(sanitizerToolName(sanitizer_.tool)) +
                       ": compute-sanitizer checks CUDA only, not the " + backend +
                       " backend (use --backend " + sanitizerBackendsText() + ")");
    }
    setup.sanitizer = sanitizer_;
  }
  setup.policy = policy;
  setup.faults = faults;
  setup.workDir = workDir_;
  setup.captureStacks = !cl_.value<Option::NoStacks>();
  setup.forkServer = !cl_.value<Option::NoForkServer>();
  setup.slots = slots_;
  if (profile && profile->spreadOverGpus == BackendProfile::Spread::CudaVisibleDevices) {
    setup.devices = devices_;
  } else if (profile && profile->spreadOverGpus == BackendProfile::Spread::DeviceIndex) {
    setup.devices = indexDevices_;
  }
  setup.stopRequested = &Session::stopRequested;
  if (target) {
    setup.target = *target;
    // The interposer fails a target's marked runtime calls once its client library arms it; until
    // then every call passes straight through, so it is preloaded, and its Vulkan layer enabled,
    // whether or not files carry marks.
    const std::filesystem::path interposer = executableDir() / kInterposerLibrary;
    const auto prepend = [&setup](const char* name, const std::string& value) {
      const char* before = std::getenv(name);
      setup.startEnvironment.emplace_back(
          name, value + (before && *before ? std::string(":") + before : std::string()));
    };
    const std::filesystem::path layer = executableDir() / kVulkanLayerFolder;
    if (std::filesystem::exists(interposer)) {
      prepend("LD_PRELOAD", interposer.string());
      // The layer's manifest names the interposer: without it, the loader could not load it.
      if (std::filesystem::exists(layer)) {
        prepend("VK_ADD_LAYER_PATH", layer.string());
        prepend("VK_INSTANCE_LAYERS", kVulkanLayerName);
      }
    }
  }
  auto runner = std::make_unique<TrialRunner>(setup, *calibrator);
  if (target) {
    // A target that cannot run nothing cannot run anything: its runtime is missing, its adapter
    // broken. Said here, before a campaign counts every sequence as its failure.
    const TrialResult empty = runner->run(Sequence{}, TrialMode::Quick);
    if (empty.harnessError || empty.outcome.failed()) {
      std::string output = empty.evidence.outputTail;
      if (output.size() > 2000) output = "..." + output.substr(output.size() - 2000);
      throw DeviceUnavailable(
          "the target " + target->text() + " did not pass an empty sequence: " +
          (empty.harnessError ? *empty.harnessError : outcomeText(empty.outcome)) +
          (output.empty() ? "" : "\nits output:\n" + output));
    }
  }
  TrialRunner& ref = *runner;
  runners_[key] = std::move(runner);
  return ref;
}

FailWords injectedWords(const std::string& text, const std::string& backend,
                        const LifecycleModel* model) {
  FailWords words;
  if (text == "none") return words;
  const BackendProfile* profile = findBackendProfile(backend);
  const auto gives = [&](FailWord w) {
    return w != FailWord::Lost || profile == nullptr || profile->deviceLost;
  };
  const auto declared = [&](FailWord w) {
    if (model == nullptr) return true;
    return std::any_of(model->ops.begin(), model->ops.end(),
                       [w](const OpDecl& op) { return op.fails.has(w); });
  };
  if (text == "all") {
    for (const FailWord w : kFailWords) {
      if (gives(w) && declared(w)) words.add(w);
    }
    return words;
  }
  std::size_t from = 0;
  while (true) {
    const std::size_t comma = text.find(',', from);
    const std::string word = text.substr(from, comma - from);
    const std::optional<FailWord> known = failWordNamed(word);
    if (!known) {
      throw InputError("--inject " + text + ": unknown failure '" + word + "' at character " +
                       std::to_string(from + 1) + ": expected none, all, or words of " +
                       failWordList() + " joined by commas");
    }
    if (!declared(*known)) {
      throw InputError("--inject " + text + ": no operation of model " + model->name +
                       " declares fails:" + word + ", so no mark could ask for it");
    }
    if (!gives(*known)) {
      throw InputError("--inject " + text + ": backend " + backend + " cannot fail with " + word +
                       ": its runtime never returns that failure (failures.md)");
    }
    words.add(*known);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return words;
}

}  // namespace gpufuzz
