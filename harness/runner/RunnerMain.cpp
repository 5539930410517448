// RunnerMain.cpp: gpufuzz-runner, the child process. Executes one sequence file on one backend
// under one policy and fault plan, reporting progress as it goes: events on --events-fd for a
// supervisor, readable lines on stdout for a person.
//
//   gpufuzz-runner [--backend NAME|auto] [--device TEXT] [--validation on|off] [--policy NAME]
//                  [--faults NAME|PATH] [--events-fd N] [--quiet] FILE
//   gpufuzz-runner --probe [--backend NAME|auto] [--device TEXT] [--validation on|off]
//                                    (makes the backend, prints what it runs on, exits: how the
//                                     harness checks a backend it must not load itself)
//   gpufuzz-runner --fork-server     (socket at fd 3: runs each request in a fork; see
//                                     harness/protocol/ForkServerProtocol.h; also without
//                                     arguments when GPUFUZZ_FORK_SERVER_FD names the socket)
//
// The runner is a target of the protocol (target.md) built on its C++ client library
// (clients/cpp/gpufuzz/target.hpp): the events, the fork server and the child's setup are the
// library's; events go to --events-fd, else to GPUFUZZ_EVENTS_FD.
//
// Exit status: 0 pass, 1 the sequence failed (error, invalid, mismatch, leak), 2 bad usage or
// input (or no usable device), 3 the runner itself failed.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "harness/base/RunConfig.h"
#include "harness/protocol/Events.h"
#include "harness/protocol/ForkServerProtocol.h"
#include "harness/runner/SequenceExecutor.h"
#include "model/Sequence.h"
#include "renderer/Backends.h"
#include "renderer/InputError.h"
#include "renderer/device/DeviceError.h"
#include "renderer/faults/FaultInjector.h"
#include "renderer/faults/FaultPlan.h"

namespace gpufuzz {
namespace {

constexpr std::string_view kUsage =
    "usage: gpufuzz-runner [--backend NAME|auto] [--device TEXT] [--validation on|off]\n"
    "                      [--policy NAME] [--faults NAME|PATH] [--events-fd N] [--quiet] FILE\n"
    "       gpufuzz-runner --probe [--backend NAME|auto] [--device TEXT] [--validation on|off]\n";

struct RunnerArgs {
  RunOverrides overrides;
  int eventsFd = -1;
  bool quiet = false;
  bool probe = false;
  std::string file;
};

RunnerArgs parseArgs(const std::vector<std::string>& argv) {
  RunnerArgs args;
  const std::size_t argc = argv.size();
  for (std::size_t i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw InputError("option " + std::string(arg) + " needs a value");
      return argv[++i];
    };
    if (arg == "--backend") {
      args.overrides.backend = value();
    } else if (arg == "--policy") {
      args.overrides.policy = value();
    } else if (arg == "--faults") {
      args.overrides.faults = value();
    } else if (arg == "--events-fd") {
      const std::string fd = value();
      char* end = nullptr;
      const long n = std::strtol(fd.c_str(), &end, 10);
      if (fd.empty() || *end != '\0' || n < 0 || n > 1 << 20) {
        throw InputError("--events-fd: '" + fd + "' is not a file descriptor number");
      }
      args.eventsFd = static_cast<int>(n);
    } else if (readBackendOptionArg(arg, value, args.overrides.backendOptions)) {
    } else if (arg == "--quiet") {
      args.quiet = true;
    } else if (arg == "--probe") {
      args.probe = true;
    } else if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (arg.starts_with("-") && arg != "-") {
      throw InputError("unknown option '" + std::string(arg) + "'\n" + std::string(kUsage));
    } else if (args.file.empty()) {
      args.file = arg;
    } else {
      throw InputError("one sequence file at a time (got '" + args.file + "' and '" +
                       std::string(arg) + "')");
    }
  }
  if (args.probe && !args.file.empty()) throw InputError("--probe takes no sequence file");
  if (args.file.empty() && !args.probe) {
    throw InputError("no sequence file given\n" + std::string(kUsage));
  }
  return args;
}

/// Events for the supervisor, and a line per operation for a person.
class RunnerProgress final : public ProgressListener {
 public:
  RunnerProgress(const Sequence& seq, const EventWriter& events, bool quiet)
      : seq_(seq), events_(events), quiet_(quiet) {}

  void begin(At at, std::string_view op) override {
    events_.write(Event{Event::Kind::Begin, 0, at, std::string(op), {}});
    if (quiet_) return;
    const std::string text =
        at.isEnd() ? "release leftovers" : operationText(seq_.ops[at.ordinal - 1]);
    std::printf("%4s  %s ... ", atText(at).c_str(), text.c_str());
    std::fflush(stdout);
  }
  void done(At at) override {
    events_.write(Event{Event::Kind::Done, 0, at, {}, {}});
    if (quiet_) return;
    std::printf("ok\n");
    std::fflush(stdout);
  }

 private:
  const Sequence& seq_;
  const EventWriter& events_;
  bool quiet_;
};

/// --probe: the backend made as a run would make it, and one line saying what it runs on.
int probe(const RunnerArgs& args) {
  const RunConfig config = resolveRunConfig(args.overrides, Directives{}, "");
  const std::unique_ptr<Backend> backend = makeBackend(config.backend, config.backendOptions);
  std::printf("%s\t%s\n", std::string(backend->name()).c_str(), backend->description().c_str());
  return 0;
}

int run(const RunnerArgs& args) {
  if (args.probe) return probe(args);
  const Sequence seq = loadSequence(args.file);
  const RunConfig config = resolveRunConfig(args.overrides, seq.directives, args.file);
  auto device = std::make_unique<Device>(makeBackend(config.backend, config.backendOptions));
  const std::string backend(device->backendName());
  const FaultPlan plan = loadFaultPlan(faultsFor(config, backend));
  device->addInterceptor(std::make_shared<FaultInjector>(plan));

  const EventWriter events(args.eventsFd >= 0 ? args.eventsFd
                                              : target::Events::fromEnvironment().fd());
  events.write(Event{Event::Kind::Start, static_cast<uint32_t>(seq.ops.size()), {}, {}, {}});
  if (!args.quiet) {
    std::printf("gpufuzz-runner: %s: backend %s (%s), policy %s, faults %s, %zu operations\n",
                args.file.c_str(), backend.c_str(), device->backendDescription().c_str(),
                std::string(policyName(config.policy)).c_str(), plan.name.c_str(), seq.ops.size());
    std::fflush(stdout);
  }
  RunnerProgress progress(seq, events, args.quiet);
  const RunOutcome outcome = executeSequence(seq, *device, config.policy, progress);
  events.write(Event{Event::Kind::Outcome, 0, {}, {}, outcome});
  if (!args.quiet) {
    if (outcome.failed() && outcome.at) std::printf("FAILED\n");
    const Expectation expected = seq.expectationFor(backend);
    std::printf("outcome: %s\nexpected: %s (%s)\n", outcomeText(outcome).c_str(),
                expectationText(expected).c_str(), outcome.meets(expected) ? "met" : "NOT met");
    std::fflush(stdout);
  }
  return outcome.failed() ? 1 : 0;
}

/// The runner's whole job for one sequence, as its exit status: in a process of its own, or in
/// a fork of a fork server.
int runnerMain(const std::vector<std::string>& argv) {
  using namespace gpufuzz;
  try {
    return run(parseArgs(argv));
  } catch (const InputError& e) {
    std::cerr << "gpufuzz-runner: error: " << e.what() << '\n';
    return 2;
  } catch (const DeviceUnavailable& e) {
    std::cerr << "gpufuzz-runner: error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "gpufuzz-runner: internal error: " << e.what() << '\n';
    return 3;
  }
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
