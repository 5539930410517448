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

#include "harness/supervise/ChildProcess.h"
#include "renderer/Backends.h"
#include "renderer/InputError.h"
#include "renderer/Text.h"
#include "renderer/device/DeviceError.h"
#include "renderer/faults/FaultPlan.h"

namespace gpufuzz {

std::optional<unsigned> driverContextJobs(std::string_view backend, std::string_view description,
                                          int gpus, unsigned persistent) {
  // Each context a sequence makes is a driver context: their creation serializes in the
  // driver, so more children only stretch every operation's latency, and the automatic
  // deadlines with it. Measured on an H200 (bench/RESULTS.md, "--jobs on the GPU"): 2 jobs ran
  // the most sequences a second on both.
  constexpr unsigned kPerDevice = 2;
  const auto devices = static_cast<unsigned>(std::max(gpus, 1));
  if (backend == "cuda") return kPerDevice * devices;
  if (backend == "opencl" && containsIgnoringCase(description, "nvidia")) return kPerDevice;
  // cuda-async's contexts are cheap, but a fresh process's start (cuInit, the primary
  // context's retain) serializes in the driver the same way: on the H200 4 children ran as
  // many executions a second as 16 (3.7/s and 3.5/s) with a third of the p99, and found the
  // seed's hang in 32 s against 74 s. With --persistent a process starts once for many
  // sequences, and one per core ran 772/s.
  constexpr unsigned kFreshAsyncPerDevice = 4;
  if (backend == "cuda-async" && persistent <= 1) return kFreshAsyncPerDevice * devices;
  return std::nullopt;
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
  if (cl.has(Option::Model)) {
    if (cl.has(Option::Ops)) {
      throw InputError("--ops " + *cl.get(Option::Ops) + " and --model " + *cl.get(Option::Model) +
                       ": --ops names a built-in model, so give one of them");
    }
    model_ = &resolveModel(*cl.get(Option::Model));
  } else if (cl.has(Option::Ops)) {
    const std::string ops = *cl.get(Option::Ops);
    if (ops != "renderer" && ops != "device" && ops != "all") {
      throw InputError("--ops: '" + ops + "' (expected renderer, device or all)");
    }
    model_ = &builtinModel(ops);
  }
  const unsigned cores = std::max(1U, std::thread::hardware_concurrency());
  jobs_ = static_cast<unsigned>(cl.number(Option::Jobs, cores, 1, 1024));
  if (cl.has(Option::Deadline)) parseDeadlineOption(*cl.get(Option::Deadline));  // validate early
  if (cl.has(Option::Device)) {
    readBackendOptionArg(
        "--device", [&] { return *cl.get(Option::Device); }, backendOptions_);
  }
  if (cl.has(Option::Validation)) {
    backendOptions_.validation = parseValidationOption(*cl.get(Option::Validation));
  }
  if (cl.has(Option::Target)) {
    for (const Option o :
         {Option::Backend, Option::Device, Option::Validation, Option::Sanitizer}) {
      if (cl.has(o)) {
        throw InputError(std::string(optionFlag(o)) +
                         " chooses among gpufuzz's own backends; with --target the program "
                         "named is the backend (give it its own arguments in --target)");
      }
    }
  }
  if (cl.has(Option::Sanitizer)) sanitizer_ = sanitizerFor(*cl.get(Option::Sanitizer));
  runner_ = (executableDir() / "gpufuzz-runner").string();
  if (::access(runner_.c_str(), X_OK) != 0) {
    throw std::runtime_error("cannot find the runner next to gpufuzz: " + runner_);
  }
  // The sequence files of the children: in $TMPDIR when it is set (a node's scratch), else /tmp.
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/gpufuzz-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("cannot create a work directory like " + pattern + ": " +
                             std::strerror(errno));
  }
  workDir_ = pattern;
  slots_ = std::make_shared<ChildSlots>(jobs_);
  installStopHandlers();
}

const LifecycleModel& Session::fuzzModel() const {
  return model_ ? *model_ : builtinModel("renderer");
}

void Session::checkExecutable(const LifecycleModel& model, const TargetCommand* target,
                              const std::string& backend, const std::string& faults) const {
  if (target || hasRendererSemantics(model)) return;
  if (model.builtin && isRuntimeModel(model.name)) {
    if (!backendRunsModel(backend, model.name)) {
      throw InputError("model " + model.name + " is not executed by backend " + backend +
                       ": it runs on " + backendsOfModelText(model.name));
    }
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

std::string Session::backendRequest(const std::string& requested,
                                    const LifecycleModel& model) const {
  if (requested != "auto" || !model.builtin) return requested;
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
  ChildCommand probe{runner_, {"--probe", "--backend", backend}};
  for (std::string& arg : backendOptionArgs(backendOptions_))
    probe.args.push_back(std::move(arg));
  constexpr std::chrono::seconds kProbeLimit{120};
  const CapturedRun r = runCaptured(probe, kProbeLimit, 64 * 1024);
  std::string output = r.output;
  while (!output.empty() && (output.back() == '\n' || output.back() == ' '))
    output.pop_back();
  if (!r.timedOut && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) {
    const size_t tab = output.find('\t');
    return tab == std::string::npos ? backend : output.substr(tab + 1);
  }
  if (!r.timedOut && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 2) {
    constexpr std::string_view kPrefix = "gpufuzz-runner: error: ";
    if (output.starts_with(kPrefix)) output.erase(0, kPrefix.size());
    throw DeviceUnavailable(output);
  }
  throw std::runtime_error(
      "checking the " + backend + " backend in a runner failed (" +
      (r.timedOut ? std::string("no answer in 120 s") : "wait status " + std::to_string(r.status)) +
      "): " + output);
}

std::string Session::resolveBackend(const std::string& requested) {
  if (requested != "auto") backendInfo(requested);  // InputError for an unknown name
  if (requested == "sim") return "sim";
  auto it = resolved_.find(requested);
  if (it != resolved_.end()) return it->second;
  if (requested != "auto" && requested != "cuda") {
    const BackendInfo& info = backendInfo(requested);
    if (info.built && info.probeInChild) {
      descriptions_[requested] = probeInChild(requested);
      if (auto most = driverContextJobs(requested, descriptions_[requested], 1, persistent())) {
        capDefaultJobs(*most);
      }
    } else {
      std::unique_ptr<Backend> backend = makeBackend(requested, backendOptions_);
      descriptions_[requested] = backend->description();
      held_.push_back(std::move(backend));
    }
    resolved_[requested] = requested;
    return requested;
  }
  if (!cuda_) {
    // DeviceUnavailable for cuda
    std::unique_ptr<Backend> probe = makeBackend(requested, backendOptions_);
    if (probe->name() == "cuda") cuda_ = std::move(probe);
  }
  const std::string name = cuda_ ? "cuda" : "sim";
  if (cuda_) descriptions_["cuda"] = cuda_->description();
  resolved_[requested] = name;
  if (cuda_ && !devices_) {
    const int count = cudaDeviceCount();
    devices_ = std::make_shared<DeviceSpread>(
        DeviceSpread::visibleDevices(count, std::getenv("CUDA_VISIBLE_DEVICES")));
    capDefaultJobs(*driverContextJobs("cuda", descriptions_["cuda"], count));
  }
  return name;
}

void Session::capDefaultJobs(unsigned most) {
  // An explicit --jobs stands; so do the slots of runners already made.
  if (cl_.has(Option::Jobs) || !runners_.empty() || jobs_ <= most) return;
  jobs_ = most;
  slots_ = std::make_shared<ChildSlots>(jobs_);
}

Session::FileRun Session::forFile(const Sequence& seq, const std::string& file) {
  FileRun run;
  run.config = resolveRunConfig(RunOverrides{cl_.get(Option::Backend), cl_.get(Option::Policy),
                                             cl_.get(Option::Faults), backendOptions_},
                                seq.directives, file);
  const TargetCommand* target = targetFor(seq, file);
  run.backend =
      target ? kTargetBackend : resolveBackend(backendRequest(run.config.backend, seq.lifecycle()));
  checkExecutable(seq.lifecycle(), target, run.backend, faultsFor(run.config, run.backend));
  checkFaultPlan(run.config, run.backend, seq, file);
  run.trials = &trials(run.backend, run.config.policy, faultsFor(run.config, run.backend), target);
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
                             const std::string& faults, const TargetCommand* target) {
  const std::string key = backend + "|" + std::string(policyName(policy)) + "|" + faults +
                          (target ? "|" + target->text() : "");
  auto it = runners_.find(key);
  if (it != runners_.end()) return *it->second;
  loadFaultPlan(faults);  // a bad plan is bad input, found here rather than by a child
  auto& calibrator = calibrators_[backend];
  if (!calibrator) {
    DeadlineSettings settings = DeadlineSettings::forBackend(backend);
    if (cl_.has(Option::Deadline)) settings.fixed = parseDeadlineOption(*cl_.get(Option::Deadline));
    calibrator = std::make_unique<DeadlineCalibrator>(settings);
  }
  TrialSetup setup;
  setup.runner = runner_;
  setup.backend = backend;
  setup.backendOptions = backendOptions_;
  if (sanitizer_.tool != SanitizerTool::None) {
    if (backend != "cuda" && backend != "cuda-async") {
      throw InputError("--sanitizer " + std::string(sanitizerToolName(sanitizer_.tool)) +
                       ": compute-sanitizer checks CUDA only, not the " + backend +
                       " backend (use --backend cuda or cuda-async)");
    }
    setup.sanitizer = sanitizer_;
  }
  setup.policy = policy;
  setup.faults = faults;
  setup.workDir = workDir_;
  setup.captureStacks = !cl_.has(Option::NoStacks);
  setup.forkServer = !cl_.has(Option::NoForkServer);
  setup.slots = slots_;
  if (backend == "cuda") setup.devices = devices_;
  setup.stopRequested = &Session::stopRequested;
  if (target) setup.target = *target;
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

}  // namespace gpufuzz
