// FakeRunner.cpp: gpufuzz-fake-runner, a stand-in for gpufuzz-runner whose arguments choose how
// it behaves, so that the supervisor's every classification can be produced on demand.
//
//   gpufuzz-fake-runner [--ops N] [--hang-at K] [--spin-at K] [--segv-at K] [--fail-at K]
//                       [--sleep-at K --sleep-ms MS] [--hang-before-start] [--no-outcome]
//                       [--exit STATUS] [--output-bytes N] [--grandchild] [--list-fds]
//                       [--print-env NAME] [--events-fd FD] [--print-parent]
//                       [--setsid-grandchild]
//   gpufuzz-fake-runner --fork-server      (as gpufuzz-runner: each request runs in a fork;
//                                           GPUFUZZ_FAKE_SERVER_NOISE=N: N bytes of output first)
//
// Operation K is named after the K-th entry of a fixed list (create, draw, sync, ...).
#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "harness/protocol/Events.h"
#include "harness/protocol/ForkServerProtocol.h"

namespace gpufuzz {
namespace {

constexpr std::array<std::string_view, 5> kOpNames{"create", "draw", "sync", "read_back",
                                                   "destroy"};

struct Behaviour {
  uint32_t ops = 3;
  uint32_t hangAt = 0, spinAt = 0, segvAt = 0, failAt = 0, sleepAt = 0;
  long sleepMs = 0;
  bool hangBeforeStart = false, noOutcome = false, grandchild = false, listFds = false;
  bool printParent = false;
  bool setsidGrandchild = false;  // one in a session of its own: out of the group kill's reach
  int exitStatus = -1;            // -1: 0 for pass, 1 for a failure
  long outputBytes = 0;
  std::string printEnv;
  int eventsFd = -1;
};

Behaviour parse(int argc, char** argv) {
  Behaviour b;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto number = [&]() -> long {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gpufuzz-fake-runner: %s needs a value\n", argv[i]);
        std::exit(2);
      }
      return std::strtol(argv[++i], nullptr, 10);
    };
    if (arg == "--ops")
      b.ops = static_cast<uint32_t>(number());
    else if (arg == "--hang-at")
      b.hangAt = static_cast<uint32_t>(number());
    else if (arg == "--spin-at")
      b.spinAt = static_cast<uint32_t>(number());
    else if (arg == "--segv-at")
      b.segvAt = static_cast<uint32_t>(number());
    else if (arg == "--fail-at")
      b.failAt = static_cast<uint32_t>(number());
    else if (arg == "--sleep-at")
      b.sleepAt = static_cast<uint32_t>(number());
    else if (arg == "--sleep-ms")
      b.sleepMs = number();
    else if (arg == "--exit")
      b.exitStatus = static_cast<int>(number());
    else if (arg == "--output-bytes")
      b.outputBytes = number();
    else if (arg == "--events-fd")
      b.eventsFd = static_cast<int>(number());
    else if (arg == "--hang-before-start")
      b.hangBeforeStart = true;
    else if (arg == "--no-outcome")
      b.noOutcome = true;
    else if (arg == "--grandchild")
      b.grandchild = true;
    else if (arg == "--setsid-grandchild")
      b.setsidGrandchild = true;
    else if (arg == "--list-fds")
      b.listFds = true;
    else if (arg == "--print-parent")
      b.printParent = true;
    else if (arg == "--print-env" && i + 1 < argc)
      b.printEnv = argv[++i];
    else {
      std::fprintf(stderr, "gpufuzz-fake-runner: unknown argument '%s'\n", argv[i]);
      std::exit(2);
    }
  }
  return b;
}

[[noreturn]] void waitForever() {
  for (;;)
    ::pause();
}

[[noreturn]] void spinForever() {
  volatile unsigned long counter = 0;
  for (;;)
    counter = counter + 1;
}

[[noreturn]] void dieBySegv() {
  // No core file: it would be slow to write and litter the working directory.
  const rlimit none{0, 0};
  ::setrlimit(RLIMIT_CORE, &none);
  ::prctl(PR_SET_DUMPABLE, 0);
  ::raise(SIGSEGV);
  std::abort();
}

void writeOutput(long bytes) {
  std::string chunk(4096, 'x');
  for (long written = 0; written < bytes; written += static_cast<long>(chunk.size())) {
    std::FILE* stream = (written / 4096) % 2 == 0 ? stdout : stderr;
    std::fwrite(chunk.data(), 1, chunk.size(), stream);
    std::fflush(stream);
  }
  std::fputs("END\n", stdout);
  std::fflush(stdout);
}

int run(const Behaviour& b) {
  if (b.printParent) std::printf("parent %d\n", static_cast<int>(::getppid()));
  if (b.listFds) {
    DIR* dir = ::opendir("/proc/self/fd");
    while (const dirent* entry = dir ? ::readdir(dir) : nullptr) {
      if (entry->d_name[0] == '.' || std::atoi(entry->d_name) == ::dirfd(dir)) continue;
      std::printf("fd %s\n", entry->d_name);
    }
    if (dir) ::closedir(dir);
  }
  if (!b.printEnv.empty()) {
    const char* value = std::getenv(b.printEnv.c_str());
    std::printf("%s=%s\n", b.printEnv.c_str(), value ? value : "(unset)");
  }
  if (b.grandchild) {
    const pid_t pid = ::fork();
    if (pid == 0) waitForever();
    std::printf("grandchild %d\n", static_cast<int>(pid));
  }
  if (b.setsidGrandchild) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setsid();
      waitForever();
    }
    std::printf("stray %d\n", static_cast<int>(pid));
  }
  if (b.outputBytes > 0) writeOutput(b.outputBytes);
  std::fflush(stdout);
  if (b.hangBeforeStart) waitForever();

  const EventWriter events(b.eventsFd);
  events.write(Event{Event::Kind::Start, b.ops, {}, {}, {}, {}, {}, {}});
  for (uint32_t k = 1; k <= b.ops; ++k) {
    const std::string op(kOpNames[(k - 1) % kOpNames.size()]);
    events.write(Event{Event::Kind::Begin, 0, At{k}, op, {}, {}, {}, {}});
    if (k == b.hangAt) waitForever();
    if (k == b.spinAt) spinForever();
    if (k == b.segvAt) dieBySegv();
    if (k == b.sleepAt) std::this_thread::sleep_for(std::chrono::milliseconds(b.sleepMs));
    if (k == b.failAt) {
      const RunOutcome failed{OutcomeClass::Error, At{k}, op, "cuCtxCreate: out of memory", {}};
      events.write(Event{Event::Kind::Outcome, 0, {}, {}, failed, {}, {}, {}});
      return b.exitStatus >= 0 ? b.exitStatus : 1;
    }
    events.write(Event{Event::Kind::Done, 0, At{k}, {}, {}, {}, {}, {}});
  }
  if (!b.noOutcome) events.write(Event{Event::Kind::Outcome, 0, {}, {}, RunOutcome{}, {}, {}, {}});
  return b.exitStatus >= 0 ? b.exitStatus : 0;
}

}  // namespace
}  // namespace gpufuzz

int main(int argc, char** argv) {
  using namespace gpufuzz;
  const int serverSocket = argc == 2 && std::string_view(argv[1]) == kForkServerFlag ? 3
                           : argc == 1 ? target::forkServerSocket()
                                       : -1;
  if (serverSocket >= 0) {
    if (const char* noise = std::getenv("GPUFUZZ_FAKE_SERVER_NOISE")) {
      writeOutput(std::atol(noise));  // a server that talks at start-up, before its hello
    }
    return serveForks(serverSocket, [argv0 = argv[0]](const std::vector<std::string>& args) {
      std::vector<char*> forkArgv{argv0};
      for (const std::string& arg : args)
        forkArgv.push_back(const_cast<char*>(arg.c_str()));
      return run(parse(static_cast<int>(forkArgv.size()), forkArgv.data()));
    });
  }
  return run(parse(argc, argv));
}
