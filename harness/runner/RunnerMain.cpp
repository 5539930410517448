// RunnerMain.cpp: gpufuzz-runner, the child process. Executes one sequence file on one backend
// under one policy and fault plan, reporting progress as it goes: events on --events-fd for a
// supervisor, readable lines on stdout for a person.
//
//   gpufuzz-runner [--backend NAME|auto] [--device TEXT] [--validation on|off] [--policy NAME]
//                  [--faults NAME|PATH] [--events-fd N] [--device-memory BYTES] [--try N]
//                  [--quiet] FILE
//                                    (--device-memory: about BYTES of device memory left to the
//                                     run, docs/failures.md)
//                                    (--try: which try of a threaded sequence this is; on sim
//                                     it seeds the threads' schedule, ThreadLanes.h)
//   gpufuzz-runner [options as above] --persistent FIFO
//                                    (many sequences in this one process, one after another:
//                                     reads each sequence file's path, a line at a time, from
//                                     the named pipe FIFO, and runs it on the one device, under
//                                     the one fault plan; exits 1 after a sequence that failed,
//                                     0 at the end of FIFO)
//   gpufuzz-runner --probe [--backend NAME|auto] [--device TEXT] [--validation on|off]
//                                    (makes the backend, prints what it runs on, exits: how the
//                                     harness checks a backend it must not load itself)
//   gpufuzz-runner --fork-server     (socket at fd 3: runs each request in a fork; see
//                                     harness/protocol/ForkServerProtocol.h; also without
//                                     arguments when GPUFUZZ_FORK_SERVER_FD names the socket)
//
// The runner is a target of the protocol (docs/target.md) built on its C++ client library
// (clients/cpp/gpufuzz/target.hpp): the events, the fork server and the child's setup are the
// library's; events go to --events-fd, else to GPUFUZZ_EVENTS_FD.
//
// The command line is declared once, for the harness that writes it and for this parser, in
// harness/protocol/RunnerCommandLine.h.
//
// Exit status: 0 pass, 1 the sequence failed (error, invalid, mismatch, leak), 2 bad usage or
// input (or no usable device), 3 the runner itself failed (harness/base/ExitStatus.h).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/InputError.h"
#include "harness/base/ExitStatus.h"
#include "harness/base/RunConfig.h"
#include "harness/protocol/Events.h"
#include "harness/protocol/ForkServerProtocol.h"
#include "harness/protocol/RunnerCommandLine.h"
#include "harness/runner/CrashHandler.h"
#include "harness/runner/ModelRun.h"
#include "harness/runner/SequenceExecutor.h"
#include "harness/runner/ThreadLanes.h"
#include "model/Sequence.h"
#include "renderer/Backends.h"
#include "renderer/device/DeviceError.h"
#include "renderer/device/RuntimeSeam.h"
#include "renderer/faults/FaultInjector.h"
#include "renderer/faults/FaultPlan.h"

namespace gpufuzz {
namespace {

/// The operation the calling thread is in, for the `fault` events of its calls.
thread_local std::optional<At> runningHere;

/// Events for the supervisor, and a line per operation for a person: begun and done on one
/// line, or, for a threaded sequence, whole lines once done, so threads never split a line.
class RunnerProgress final : public ProgressListener {
 public:
  RunnerProgress(const Sequence& seq, const EventWriter& events, bool quiet)
      : seq_(seq), events_(events), quiet_(quiet), threaded_(seq.threadCount() > 1) {}

  void start() override {
    events_.write(
        Event{Event::Kind::Start, static_cast<uint32_t>(seq_.ops.size()), {}, {}, {}, {}, {}, {}});
  }
  void begin(At at, std::string_view op) override {
    runningHere = at;
    events_.write(Event{Event::Kind::Begin, 0, at, std::string(op), {}, {}, {}, {}});
    if (quiet_ || threaded_) return;
    std::printf("%4s  %s ... ", atText(at).c_str(), text(at).c_str());
    std::fflush(stdout);
  }
  void done(At at) override {
    events_.write(Event{Event::Kind::Done, 0, at, {}, {}, {}, {}, {}});
    ended(at, "ok");
  }
  void failed(At at, std::string_view detail) override {
    events_.write(Event{Event::Kind::Fail, 0, at, {}, {}, {}, {}, std::string(detail)});
    // A call that ran out for real says so in its detail (docs/failures.md).
    const bool real = detail.starts_with(kRealFailurePrefix);
    ended(at, (real ? "failed for real: " : "failed as marked: ") +
                  std::string(real ? detail.substr(kRealFailurePrefix.size()) : detail));
  }
  void skipped(At at) override {
    events_.write(Event{Event::Kind::Skip, 0, at, {}, {}, {}, {}, {}});
    if (quiet_) return;
    std::printf("%4s  %s ... skipped: it uses a name never made\n", atText(at).c_str(),
                text(at).c_str());
    std::fflush(stdout);
  }

 private:
  /// The operation's line for a person, ended with `how`.
  void ended(At at, const std::string& how) {
    runningHere.reset();
    if (quiet_) return;
    if (threaded_) {
      std::printf("%4s  %s ... %s\n", atText(at).c_str(), text(at).c_str(), how.c_str());
    } else {
      std::printf("%s\n", how.c_str());
    }
    std::fflush(stdout);
  }

  std::string text(At at) const {
    return at.isEnd() ? "release leftovers" : operationText(seq_.ops[at.ordinal - 1]);
  }

  const Sequence& seq_;
  const EventWriter& events_;
  bool quiet_;
  bool threaded_;
};

/// --device-memory on a device whose memory cannot be bounded: bad input.
[[noreturn]] void unbounded(const std::string& backend, const std::string& description) {
  throw InputError("--device-memory: backend " + backend + " cannot bound the memory of " +
                   description + " (failures.md); " + std::string(kBoundedBackends) + " can");
}

/// --probe: the backend made as a run would make it, and one line saying what it runs on. With
/// --device-memory, whether it can bound its device's memory: leaving it all takes nothing.
int probe(const RunnerArgs& args) {
  const RunConfig config = resolveRunConfig(args.overrides, Directives{}, "");
  const std::unique_ptr<Backend> backend = makeBackend(config.backend, config.backendOptions);
  if (config.backendOptions.deviceMemory && !backend->leaveDeviceMemory(UINT64_MAX)) {
    unbounded(config.backend, backend->description());
  }
  std::printf("%s\t%s\n", std::string(backend->name()).c_str(), backend->description().c_str());
  return 0;
}

std::mutex firedMutex;

/// What a run executes on: for the renderer's models, the device with the fault plan at its seam;
/// for a runtime model (docs/models.md), its backend's executor.
struct RunDevice {
  std::unique_ptr<Device> device;
  std::unique_ptr<ModelExecutor> executor;
  /// The runtime model the executor runs; empty for the renderer's models.
  std::string model;
  std::string backend;
  std::string description;
  FaultPlan plan;
  std::shared_ptr<FaultInjector> injector;
  /// The lines of the rules that fired in the sequence running now (each is told once per
  /// operation it fires in), under firedMutex: the operations' threads fire rules.
  std::set<std::pair<int, uint32_t>> fired;
};

/// Whether `model` runs on a backend's executor rather than through the device seam.
bool runsOnExecutor(const LifecycleModel& model) {
  return model.builtin && isRuntimeModel(model.name);
}

/// --device-memory: the device keeps about that much for the run, and a call that runs out for real
/// ends its operation as a failure (docs/failures.md). Bad input where the backend cannot bound its
/// memory.
void boundDeviceMemory(const RunConfig& config, RunDevice& d) {
  const std::optional<uint64_t> bytes = config.backendOptions.deviceMemory;
  if (!bytes) return;
  const bool bounded =
      d.executor ? d.executor->leaveDeviceMemory(*bytes) : d.device->leaveDeviceMemory(*bytes);
  if (!bounded) unbounded(d.backend, d.description);
  setMemoryBounded(true);
}

RunDevice makeRunDevice(const RunConfig& config, const LifecycleModel& model) {
  RunDevice d;
  if (runsOnExecutor(model)) {
    const std::string_view backend =
        config.backend == "auto" ? backendForModel(model.name) : config.backend;
    // Fault plans act at the device seam, which a runtime model's calls do not cross.
    const std::string faults = faultsFor(config, backend);
    if (faults != "none") {
      throw InputError("faults " + faults + ": fault plans act at the device seam of the " +
                       "renderer's models; model " + model.name + " runs with faults none");
    }
    d.executor = makeModelExecutor(backend, model.name, config.backendOptions);
    d.model = model.name;
    d.backend = std::string(backend);
    d.description = d.executor->description();
    d.plan = loadFaultPlan("none");
    boundDeviceMemory(config, d);
    return d;
  }
  d.device = std::make_unique<Device>(makeBackend(config.backend, config.backendOptions));
  d.backend = std::string(d.device->backendName());
  d.description = d.device->backendDescription();
  d.plan = loadFaultPlan(faultsFor(config, d.backend));
  d.injector = std::make_shared<FaultInjector>(d.plan);
  d.device->addInterceptor(d.injector);
  boundDeviceMemory(config, d);
  return d;
}

EventWriter eventWriter(const RunnerArgs& args) {
  return EventWriter(args.eventsFd.value_or(target::Events::fromEnvironment().fd()));
}

/// How the threads of `seq` take turns (docs/sequences.md, Threads): on sim by the device's PCT
/// schedule of (seed, try) whatever --schedule says, so that its planted races keep their seeds;
/// on a real runtime by the try's schedule of --schedule, none for os.
std::optional<ScheduleChoice> threadSchedule(const RunnerArgs& args, const RunConfig& config,
                                             const Sequence& seq, const std::string& backend) {
  const uint64_t attempt = args.attempt.value_or(config.firstTry);
  const BackendProfile* profile = findBackendProfile(backend);
  if (profile && profile->deterministic) return ScheduleChoice{scheduleSeed(seq, attempt)};
  return runtimeSchedule(config.schedule, seq, attempt);
}

/// A sequence of the renderer's models on the device, the plan's rules told as they fire.
RunOutcome runOnDevice(const RunnerArgs& args, const Sequence& seq, const RunConfig& config,
                       RunDevice& d, const EventWriter& events, ProgressListener& progress) {
  // A planted failure names its rule, before the rule's effect (which may never return).
  d.fired.clear();
  d.injector->setFiredObserver(
      [&d, &events](const FaultRule& rule, const CallSite&, const CounterSnapshot&) {
        const std::optional<At> at = runningHere;
        {
          const std::lock_guard lock(firedMutex);
          const uint32_t place = at ? at->ordinal : 0;
          if (!d.fired.emplace(rule.line, place).second) return;
        }
        events.write(Event{Event::Kind::Fault,
                           0,
                           {},
                           std::string(effectName(rule.effect)),
                           {},
                           d.plan.cite(rule),
                           at,
                           {}});
      });
  d.injector->resetNearest();
  const RunOutcome outcome = executeSequence(seq, *d.device, config.policy, progress,
                                             threadSchedule(args, config, seq, d.backend));
  d.injector->setFiredObserver(nullptr);
  const std::vector<uint32_t> nearest = d.injector->nearest();
  const auto reached = d.injector->reached();
  for (std::size_t r = 0; r < reached.size(); ++r) {
    for (std::size_t c = 0; c < FaultInjector::kNearConditions; ++c) {
      if (reached[r][c] == 0) continue;
      Event reach{Event::Kind::Reach, 0, {}, {}, {}, d.plan.cite(d.plan.rules[r]), {}, {}};
      reach.conditions = c + 1;
      reach.held = reached[r][c];
      events.write(reach);
    }
  }
  for (std::size_t r = 0; r < nearest.size(); ++r) {
    for (uint32_t set = 1; set < 32; ++set) {
      if (((nearest[r] >> set) & 1U) == 0) continue;
      Event near{Event::Kind::Near, 0, {}, {}, {}, d.plan.cite(d.plan.rules[r]), {}, {}};
      near.held = set;
      near.conditions = d.plan.rules[r].conditions.size();
      events.write(near);
    }
  }
  return outcome;
}

/// One sequence on the device, its events written and, unless quiet, its progress printed.
/// A mark asks for a failure the backend's runtime never gives (docs/failures.md): bad input,
/// placed, before anything runs.
void checkMarks(const std::string& file, const Sequence& seq, const RunDevice& d) {
  for (const Operation& op : seq.ops) {
    if (!op.mark) continue;
    // A runtime model declares only the words its runtime's calls return (its `fails:`), and
    // its executor's calls fail at the runtime-call seam.
    if (d.executor) continue;
    const std::string word(failWordName(op.mark->word));
    if (!d.device->canFail(callFailureOf(*op.mark).kind)) {
      throw InputError(file, op.line, 1,
                       "backend " + d.backend + " cannot fail with " + word + ": its runtime " +
                           "never returns that failure (failures.md)");
    }
  }
}

RunOutcome runOne(const RunnerArgs& args, const std::string& file, const Sequence& seq,
                  const RunConfig& config, RunDevice& d, const EventWriter& events) {
  checkMarks(file, seq, d);
  if (!args.quiet) {
    std::printf("gpufuzz-runner: %s: backend %s (%s), policy %s, faults %s, %zu operations\n",
                file.c_str(), d.backend.c_str(), d.description.c_str(),
                std::string(policyName(config.policy)).c_str(), d.plan.name.c_str(),
                seq.ops.size());
    std::fflush(stdout);
  }
  RunnerProgress progress(seq, events, args.quiet);
  const seam::CallCounts before = seam::callCounts();
  const RunOutcome outcome =
      d.executor ? executeModelSequence(seq, *d.executor, progress,
                                        threadSchedule(args, config, seq, d.backend))
                 : runOnDevice(args, seq, config, d, events, progress);
  const seam::CallCounts after = seam::callCounts();
  Event calls{Event::Kind::Calls, 0, {}, {}, {}, {}, {}, {}};
  calls.calls = after.calls - before.calls;
  calls.overlapped = after.overlapped - before.overlapped;
  events.write(calls);
  events.write(Event{Event::Kind::Outcome, 0, {}, {}, outcome, {}, {}, {}});
  if (!args.quiet) {
    if (outcome.failed() && outcome.at) std::printf("FAILED\n");
    const Expectation expected = seq.expectationFor(d.backend);
    std::printf("outcome: %s\nexpected: %s (%s)\n", outcomeText(outcome).c_str(),
                expectationText(expected).c_str(), outcome.meets(expected) ? "met" : "NOT met");
    std::fflush(stdout);
  }
  return outcome;
}

/// --persistent FIFO: sequences one after another on one device, each named by a line of FIFO.
/// The plan's counts and the runtime's state carry over from one to the next, as in any process
/// that renders more than once; a failure ends the process, since what it leaves behind would
/// make the next sequence's outcome meaningless.
int runPersistent(const RunnerArgs& args) {
  const RunConfig config = resolveRunConfig(args.overrides, Directives{}, "");
  std::ifstream requests(args.persistent);
  if (!requests) {
    throw InputError("--persistent: cannot open " + args.persistent + ": " + std::strerror(errno));
  }
  // Made for the first file's model: a renderer model's device, or a runtime model's executor.
  std::optional<RunDevice> d;
  const EventWriter events = eventWriter(args);
  for (std::string file; std::getline(requests, file);) {
    const Sequence seq = loadSequence(file);
    const RunConfig own = resolveRunConfig(args.overrides, seq.directives, file);
    if (own.backend != config.backend || own.faults != config.faults) {
      throw InputError(file +
                       ": a persistent runner keeps its backend and fault plan; the file "
                       "asks for others");
    }
    if (!d) d.emplace(makeRunDevice(own, seq.lifecycle()));
    const std::string model = runsOnExecutor(seq.lifecycle()) ? seq.lifecycle().name : "";
    if (model != d->model) {
      throw InputError(file + ": a persistent runner keeps its executor; the file's model " +
                       seq.lifecycle().name + " needs another");
    }
    if (runOne(args, file, seq, own, *d, events).failed()) return 1;
  }
  return 0;
}

int run(const RunnerArgs& args) {
  if (args.probe) return probe(args);
  if (!args.persistent.empty()) return runPersistent(args);
  const Sequence seq = loadSequence(args.file);
  const RunConfig config = resolveRunConfig(args.overrides, seq.directives, args.file);
  RunDevice d = makeRunDevice(config, seq.lifecycle());
  return runOne(args, args.file, seq, config, d, eventWriter(args)).failed() ? 1 : 0;
}

/// The runner's whole job for one sequence, as its exit status: in a process of its own, or in
/// a fork of a fork server.
int runnerMain(const std::vector<std::string>& argv) {
  // A crash's frames go to the file the supervisor named (harness/protocol/CrashReport.h).
  installCrashHandler();
  // A stuck or late run's stacks, when its supervisor asks for them.
  installStacksHandler();
  return exitStatusOf(kRunnerProgram, [&] {
    if (std::find(argv.begin(), argv.end(), "--help") != argv.end() ||
        std::find(argv.begin(), argv.end(), "-h") != argv.end()) {
      std::cout << runnerUsageText();
      return 0;
    }
    return run(parseRunnerArgs(argv));
  });
}

}  // namespace
}  // namespace gpufuzz

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  // A fork server as every target of the protocol is one (GPUFUZZ_FORK_SERVER_FD, no
  // arguments), or as asked by --fork-server (its socket at fd 3).
  const int serverSocket = args.empty() ? gpufuzz::target::forkServerSocket()
                           : args.size() == 1 && args[0] == gpufuzz::kForkServerFlag
                               ? gpufuzz::target::kEventsFd
                               : -1;
  if (serverSocket >= 0) {
    // The built-in models and fault plans are read once here, not again by every forked child:
    // a child's page faults are its largest cost, and each page it touches anew costs one.
    gpufuzz::defaultModel();
    gpufuzz::warmBuiltinPlans();
    // The backend's runtime is mapped once here, not loaded again by every forked child.
    return gpufuzz::serveForks(serverSocket, gpufuzz::runnerMain,
                               [](const std::vector<std::string>& a) {
                                 for (std::size_t i = 0; i + 1 < a.size(); ++i) {
                                   if (a[i] == "--backend") gpufuzz::preloadRuntime(a[i + 1]);
                                 }
                               });
  }
  return gpufuzz::runnerMain(args);
}
