// ExplainCommand.cpp: `gpufuzz explain FILE`: what a failing sequence's failure needs and what
// prevents it, printed and written as Markdown beside the finding (or under --out).
#include <chrono>
#include <cstdio>

#include "harness/base/AtomicFile.h"
#include "harness/base/Json.h"
#include "harness/campaign/ReportFile.h"
#include "harness/cli/FailingFile.h"
#include "harness/cli/Subcommands.h"
#include "harness/search/Explainer.h"
#include "harness/search/ExplanationReport.h"
#include "harness/search/Minimize.h"

namespace gpufuzz {

int runExplain(Session& session) {
  const CommandLine& cl = session.commandLine();
  const auto started = std::chrono::steady_clock::now();
  // Confirmed, so that a deadline miss that was noise is not explained as a hang.
  const FailingFile failing = runFailingFile(session, TrialMode::Confirmed, "explain");
  if (failing.exitStatus) return *failing.exitStatus;
  const auto& [file, seq, confirmations, run, first, exitStatus] = failing;
  TrialRunner& trials = *run.trials;
  std::printf("gpufuzz: %s fails: %s\n", file.c_str(), outcomeText(first.outcome).c_str());
  std::fflush(stdout);

  ExplainOptions options;
  options.shrink = !cl.value<Option::NoShrink>();
  options.candidateLimit = candidateStuckLimit(first);
  options.confirmations = confirmations;
  options.onProgress = [&](const std::string& what) {
    if (session.quiet()) return;
    std::printf("  %s\n", what.c_str());
    std::fflush(stdout);
  };
  Explanation e = explainFailure(trials, session.jobs(), seq, first.outcome, options);
  e.executions += first.executions;
  if (Session::stopRequested()) return 130;

  const ExplanationReport explanation = explanationReport(e);
  const std::string markdown = explanationMarkdown(explanation);
  const auto path = explanationPath(file, cl.value<Option::Out>(), e);
  writeFileAtomically(path, markdown);
  if (!session.quiet()) std::printf("\n%s\n", markdown.c_str());
  std::printf("explained in %zu experiments, %llu executions, %.1f s; written to %s\n",
              e.experimentsRun, static_cast<unsigned long long>(e.executions),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
              path.string().c_str());

  if (const auto reportFile = cl.value<Option::Report>()) {
    Report report;
    report.command = "explain";
    report.seed = seq.directives.seed.value_or(0);
    report.describeRun(trials.setup());
    report.executions = e.executions;
    report.elapsedSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    report.extra.emplace_back("explanation", explanationJson(explanation));
    report.extra.emplace_back("explanation_file", jsonString(path.string()));
    writeReport(*reportFile, report);
  }
  if (e.inconclusive > 0) {
    std::fprintf(stderr, "gpufuzz: the harness failed on %u experiment(s): see the report\n",
                 e.inconclusive);
    return 3;
  }
  return 0;
}

}  // namespace gpufuzz
