// GpufuzzMain.cpp: the gpufuzz executable: fuzz, replay, shrink, explain (cli.md), promote,
// merge, plot and report.
#include <csignal>
#include <cstdio>

#include "harness/base/ExitStatus.h"
#include "harness/cli/Subcommands.h"

int main(int argc, char** argv) {
  using namespace gpufuzz;
  // Past a file-size limit (RLIMIT_FSIZE) a write fails with EFBIG and the file is named, instead
  // of SIGXFSZ ending the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  return exitStatusOf("gpufuzz", [&] {
    if (const auto help = helpRequested(argc, argv)) {
      std::fputs(help->c_str(), stdout);
      return 0;
    }
    const CommandLine cl = parseCommandLine(argc, argv);
    if (cl.command == "model") return runModel(cl);
    Session session(cl);
    if (cl.command == "fuzz") return runFuzz(session);
    if (cl.command == "replay") return runReplay(session);
    if (cl.command == "shrink") return runShrink(session);
    if (cl.command == "promote") return runPromote(session);
    if (cl.command == "merge") return runMerge(session);
    if (cl.command == "plot") return runPlot(session);
    if (cl.command == "report") return runReport(session);
    if (cl.command == "sweep") return runSweep(session);
    return runExplain(session);
  });
}
