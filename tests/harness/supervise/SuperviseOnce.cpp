// SuperviseOnce.cpp: gpufuzz-supervise-once, a harness of one run, so that a test can measure a
// harness process (its peak memory) and kill it (with SIGKILL, to see what outlives it).
//
//   gpufuzz-supervise-once [--deadline-ms MS] CMD ARGS...
//
// CMD is a target (docs/target.md). Prints `watchdog PID` before it starts CMD, then the outcome
// and any harness error.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "harness/supervise/Strays.h"
#include "harness/supervise/Supervisor.h"

int main(int argc, char** argv) {
  using namespace gpufuzz;
  SupervisionLimits limits;
  limits.captureStacks = false;
  limits.target = true;  // CMD speaks docs/target.md
  int i = 1;
  for (; i < argc && std::string_view(argv[i]).starts_with("--"); ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--deadline-ms" && i + 1 < argc) {
      limits.progressDeadline = std::chrono::milliseconds(std::atol(argv[++i]));
    } else {
      std::fprintf(stderr, "gpufuzz-supervise-once: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (i >= argc) {
    std::fprintf(stderr, "gpufuzz-supervise-once: no command\n");
    return 2;
  }
  ChildCommand command{argv[i], {}};
  for (++i; i < argc; ++i)
    command.args.emplace_back(argv[i]);
  strays::prepare();
  std::printf("watchdog %d\n", static_cast<int>(strays::watchdogPid()));
  std::fflush(stdout);
  const Supervised s = supervise(command, limits);
  std::printf("outcome %s\n", outcomeText(s.outcome).c_str());
  if (s.harnessError) std::printf("harness error %s\n", s.harnessError->c_str());
  return 0;
}
