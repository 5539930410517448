// ShrinkCommand.cpp: `gpufuzz shrink FILE [-o OUT]`: shrinks a failing sequence file to a
// 1-minimal one and writes it, replayable with no options.
#include <chrono>
#include <cstdio>

#include "harness/base/AtomicFile.h"
#include "harness/base/ModelFile.h"
#include "harness/campaign/ReportFile.h"
#include "harness/cli/FailingFile.h"
#include "harness/cli/Subcommands.h"
#include "harness/search/Minimize.h"

namespace gpufuzz {

int runShrink(Session& session) {
  const CommandLine& cl = session.commandLine();
  const auto started = std::chrono::steady_clock::now();
  const FailingFile failing = runFailingFile(session, TrialMode::Evidence, "shrink");
  if (failing.exitStatus) return *failing.exitStatus;
  const auto& [file, seq, confirmations, run, first, exitStatus] = failing;
  TrialRunner& trials = *run.trials;
  std::printf("gpufuzz: %s fails: %s\nshrinking...\n", file.c_str(),
              outcomeText(first.outcome).c_str());
  Shrinker shrinker(trials, session.jobs());
  // A crash with the runner's frames may shrink to another operation with the same frames.
  MinimizeRequest request{seq,           first, seq.directives.seed, "gpufuzz shrink " + file,
                          confirmations, true};
  Finding f = minimizeFailure(shrinker, trials, request, [&](const std::string& step) {
    if (!session.quiet()) std::printf("  %s\n", step.c_str());
  });
  f.executionsToFind = first.executions;
  // A shrink cut short by Ctrl-C keeps its best sequence so far, marked so.
  if (f.stopped)
    f.minimal.directives.notes.push_back("shrink interrupted by a stop: may not be minimal");
  const std::string out = cl.value<Option::Output>().value_or(
      std::filesystem::path(file).replace_extension("").string() + ".min.seq");
  writeFileAtomically(
      out, printSequence(withPortableModel(
               f.minimal, std::filesystem::absolute(std::filesystem::path(out)).parent_path())));
  std::printf(
      "%s at %s (%s), %zu operations (from %zu), %s, %llu executions\n%s"
      "saved to %s\nreplay: gpufuzz replay %s\n",
      std::string(outcomeClassName(f.outcome.cls)).c_str(),
      f.outcome.at ? atText(*f.outcome.at).c_str() : "-", f.outcome.op.c_str(),
      f.minimal.ops.size(), seq.ops.size(), f.reproductionText().c_str(),
      static_cast<unsigned long long>(f.executionsToShrink),
      normalizedOperations(f.minimal).c_str(), out.c_str(), out.c_str());
  if (const auto reportFile = cl.value<Option::Report>()) {
    Report report;
    report.command = "shrink";
    report.seed = f.seed;
    report.describeRun(trials.setup());
    report.executions = trials.executions();
    report.elapsedSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    report.findings.push_back({f, out});
    writeReport(*reportFile, report);
  }
  return f.stopped ? 130 : 0;
}

}  // namespace gpufuzz
