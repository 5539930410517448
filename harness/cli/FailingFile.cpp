// FailingFile.cpp: the first run of a failing sequence file.
#include "harness/cli/FailingFile.h"

#include <cstdio>

#include "base/InputError.h"
#include "harness/base/RunConfig.h"
#include "harness/campaign/ReportFile.h"

namespace gpufuzz {

FailingFile runFailingFile(Session& session, TrialMode mode, const char* verb) {
  const CommandLine& cl = session.commandLine();
  FailingFile f;
  f.file = cl.files.front();
  f.seq = loadSequence(f.file, session.model());
  f.confirmations = static_cast<uint32_t>(cl.value<Option::Confirmations>());
  f.run = session.forFile(f.seq, f.file);
  // A threaded file fails on some schedules: up to --confirmations tries, each its own.
  const uint32_t tries = f.seq.threadCount() > 1 ? f.confirmations : 1;
  f.first = f.run.trials->runTries(
      f.seq, mode, std::nullopt, tries, [](const TrialResult& t) { return t.outcome.failed(); },
      f.run.config.firstTry);
  if (f.first.harnessError) {
    std::fprintf(stderr, "gpufuzz: the harness failed: %s\n", f.first.harnessError->c_str());
    f.exitStatus = Session::stopRequested() ? 130 : 3;
    return f;
  }
  if (!f.first.outcome.failed()) {
    throw InputError(f.file + ": the sequence passes on " + f.run.backend + " (policy " +
                     std::string(policyName(f.run.config.policy)) + ", faults " +
                     f.run.trials->setup().faults +
                     (tries > 1 ? ", " + std::to_string(tries) + " tries" : std::string()) +
                     "): nothing to " + verb);
  }
  return f;
}

}  // namespace gpufuzz
