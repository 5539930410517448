// ReplayCommand.cpp: `gpufuzz replay FILE...`: runs sequence files, each under its own directives
// (options override them), and checks each against its expectation for the backend it ran on.
#include <chrono>
#include <cstdio>

#include "harness/base/RunConfig.h"
#include "harness/campaign/ReportFile.h"
#include "harness/cli/Subcommands.h"
#include "harness/search/Shrinker.h"

namespace gpufuzz {

int runReplay(Session& session) {
  const CommandLine& cl = session.commandLine();
  const auto started = std::chrono::steady_clock::now();
  const std::vector<Session::PlannedFile> planned = session.planFiles();

  Report report;
  report.command = "replay";
  int missed = 0, notRun = 0;
  // A threaded file gets up to --confirmations tries (replay's own default: Options.def), each
  // its own schedule (docs/sequences.md, Threads): a failing expectation is met by any try that
  // matches it, `pass` only if every try passes.
  const auto tries = static_cast<uint32_t>(cl.value<Option::Confirmations>());
  // Files run concurrently (bounded by --jobs); results print in file order.
  const auto outcomes =
      runConcurrently<TrialResult>(planned.size(), session.jobs(), [&](std::size_t i) {
        const Session::PlannedFile& p = planned[i];
        const Expectation expected = p.seq.expectationFor(p.run.backend);
        return p.run.trials->runTries(
            p.seq, TrialMode::Evidence, std::nullopt, p.seq.threadCount() > 1 ? tries : 1,
            [&](const TrialResult& t) {
              return t.outcome.unsupported ||
                     (expected.cls == OutcomeClass::Pass ? t.outcome.failed()
                                                         : t.outcome.meets(expected));
            },
            p.run.config.firstTry);
      });
  for (std::size_t i = 0; i < planned.size(); ++i) {
    const TrialResult& t = outcomes[i];
    if (t.harnessError) {
      std::fprintf(stderr, "gpufuzz: %s: the harness failed: %s\n%s", planned[i].file.c_str(),
                   t.harnessError->c_str(), t.evidence.outputTail.c_str());
      return Session::stopRequested() ? 130 : 3;
    }
    const Expectation expected = planned[i].seq.expectationFor(planned[i].run.backend);
    if (t.outcome.unsupported) {
      // Not a result: the target lacks what the file asks of it (docs/target.md, Vocabulary).
      ++notRun;
      std::printf("SKIP %s: not run: the target cannot run it: %s\n", planned[i].file.c_str(),
                  outcomeText(t.outcome).c_str());
      continue;
    }
    const bool met = t.outcome.meets(expected);
    missed += met ? 0 : 1;
    const std::string triesText =
        planned[i].seq.threadCount() > 1
            ? ", try " + std::to_string(t.attempt + 1) + " of up to " + std::to_string(tries)
            : "";
    std::printf("%s %s: %s (expected %s%s)\n", met ? "ok  " : "MISS", planned[i].file.c_str(),
                outcomeText(t.outcome).c_str(), expectationText(expected).c_str(),
                triesText.c_str());
    if (!t.outcome.fault.empty() && !session.quiet()) {
      std::printf("  planted by %s\n", t.outcome.fault.c_str());
    }
    if (!met && !t.evidence.stacks.empty() && !session.quiet()) {
      std::printf("  stacks of the stuck child:\n%s\n", t.evidence.stacks.c_str());
    }
    report.results.push_back({planned[i].file, t.outcome, expected, met});
    report.executions += t.executions;
  }
  std::printf("%zu file(s), %d missed their expectation", planned.size(), missed);
  std::printf(notRun > 0 ? ", %d not run (unsupported by the target)\n" : "\n", notRun);
  if (!planned.empty()) {
    report.describeRun(planned.front().run.trials->setup());
  }
  report.elapsedSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (const auto file = cl.value<Option::Report>()) writeReport(*file, report);
  if (missed > 0) return 1;
  return notRun > 0 ? 2 : 0;
}

}  // namespace gpufuzz
