// SweepCommand.cpp: `gpufuzz sweep FILE... [--inject WORDS]`: fails each call that can fail of
// each operation of each file, one run a call (docs/failures.md), as Dawn's error injector does.
// The N-th call of an operation's word is marked `!WORD@N` for N = 1, 2, ... until a run shows
// the call never came. Each run must pass; one that does not is shrunk and kept as `fuzz` keeps
// its findings, one folder a cause.
#include <chrono>
#include <cstdio>

#include "harness/campaign/FindingStore.h"
#include "harness/campaign/ReportFile.h"
#include "harness/cli/Subcommands.h"
#include "harness/search/Minimize.h"

namespace gpufuzz {

namespace {

/// Whether operation `index` of the run ended with `fail`: its marked call came.
bool failedAt(const TrialResult& t, std::size_t index) {
  for (const FailedOperation& f : t.evidence.failed) {
    if (f.at == At{static_cast<uint32_t>(index + 1)}) return true;
  }
  return false;
}

/// Whether `t` says nothing of the target (its harness failed), said on stderr: it ends the
/// sweep, as it ends a replay.
bool harnessFailed(const TrialResult& t, const std::string& file) {
  if (!t.harnessError) return false;
  std::fprintf(stderr, "gpufuzz: %s: the harness failed: %s\n", file.c_str(),
               t.harnessError->c_str());
  return true;
}

struct Tally {
  uint64_t runs = 0, calls = 0, failures = 0;
};

}  // namespace

int runSweep(Session& session) {
  const CommandLine& cl = session.commandLine();
  const auto started = std::chrono::steady_clock::now();
  const std::string inject = cl.value<Option::Inject>();
  if (inject == "none") throw InputError("--inject none: a sweep fails calls; name words or all");
  const std::vector<Session::PlannedFile> planned = session.planFiles();
  std::vector<FailWords> wordsOf;
  for (const Session::PlannedFile& p : planned)
    wordsOf.push_back(injectedWords(inject, p.run.backend, nullptr));
  FindingStore store(cl.value<Option::Out>());
  Report report;
  report.command = "sweep";
  Tally tally;
  const auto confirmations = static_cast<uint32_t>(cl.value<Option::Confirmations>());
  for (std::size_t k = 0; k < planned.size(); ++k) {
    const Session::PlannedFile& p = planned[k];
    const FailWords& words = wordsOf[k];
    TrialRunner& trials = *p.run.trials;
    const TrialResult plain = trials.run(p.seq, TrialMode::Evidence);
    ++tally.runs;
    if (harnessFailed(plain, p.file)) return Session::stopRequested() ? 130 : 3;
    if (plain.outcome.failed()) {
      std::printf("SKIP %s: fails without a failure on purpose: %s\n", p.file.c_str(),
                  outcomeText(plain.outcome).c_str());
      continue;
    }
    for (std::size_t i = 0; i < p.seq.ops.size(); ++i) {
      const Operation& op = p.seq.ops[i];
      if (op.mark) continue;  // the file's own marks stay as they are
      for (const FailWord word : kFailWords) {
        if (!words.has(word) || !op.form->fails.has(word)) continue;
        for (uint32_t nth = 1; nth <= kMaxMarkNth && !Session::stopRequested(); ++nth) {
          Sequence marked = p.seq;
          marked.ops[i].mark = Mark{word, nth};
          const TrialResult t = trials.run(marked, TrialMode::Evidence);
          ++tally.runs;
          if (harnessFailed(t, p.file)) return Session::stopRequested() ? 130 : 3;
          const bool came = failedAt(t, i);
          if (!came && !t.outcome.failed()) break;  // no N-th call of that word
          ++tally.calls;
          if (!session.quiet() || t.outcome.failed()) {
            std::printf("%s %s:%zu %s: %s\n", t.outcome.failed() ? "FAIL" : "ok  ", p.file.c_str(),
                        i + 1, operationText(marked.ops[i]).c_str(),
                        outcomeText(t.outcome).c_str());
          }
          if (t.outcome.failed()) {
            ++tally.failures;
            Shrinker shrinker(trials, session.jobs());
            const MinimizeRequest request{
                marked, t, std::nullopt, "gpufuzz sweep " + p.file, confirmations, true};
            Finding f = minimizeFailure(shrinker, trials, request);
            const auto [fresh, folder] = store.record(f);
            std::printf("  %s %s\n", fresh ? "saved to" : "known cause:",
                        (folder / "minimal.seq").string().c_str());
            report.findings.push_back({f, (folder / "minimal.seq").string()});
          }
          if (!came) break;
        }
      }
    }
  }
  std::printf("sweep: %llu calls failed on purpose in %zu file(s), %llu runs; %llu did not pass\n",
              static_cast<unsigned long long>(tally.calls), planned.size(),
              static_cast<unsigned long long>(tally.runs),
              static_cast<unsigned long long>(tally.failures));
  if (const auto reportFile = cl.value<Option::Report>()) {
    report.executions = tally.runs;
    report.elapsedSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    writeReport(*reportFile, report);
  }
  if (Session::stopRequested()) return 130;
  return tally.failures > 0 ? 1 : 0;
}

}  // namespace gpufuzz
