// GpufuzzMain.cpp: the gpufuzz executable: fuzz, replay, shrink, explain (cli.md), promote,
// merge, plot and report.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>

#include "harness/base/AtomicFile.h"
#include "harness/cli/Subcommands.h"
#include "renderer/InputError.h"
#include "renderer/device/DeviceError.h"

int main(int argc, char** argv) {
  using namespace gpufuzz;
  // Past a file-size limit (RLIMIT_FSIZE) a write fails with EFBIG and the file is named, instead
  // of SIGXFSZ ending the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(usageText().c_str(), stdout);
      return 0;
    }
  }
  try {
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
    return runExplain(session);
  } catch (const InputError& e) {
    std::fprintf(stderr, "gpufuzz: error: %s\n", e.what());
    return 2;
  } catch (const DeviceUnavailable& e) {
    std::fprintf(stderr, "gpufuzz: error: %s\n", e.what());
    return 2;
  } catch (const WriteError& e) {
    // A full disk or a file-size limit: the harness failed to keep its files (exit 3), and the
    // message names the file.
    std::fprintf(stderr, "gpufuzz: error: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpufuzz: internal error: %s\n", e.what());
    return 3;
  }
}
