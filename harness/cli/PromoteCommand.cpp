// PromoteCommand.cpp: `gpufuzz promote FINDING [--corpus DIR] [--name NAME] [--force]`: a finding
// (its folder, or its minimal.seq) becomes a regression test in the corpus: the minimal sequence
// with its policy, faults, seed and `found` directives, notes saying where it came from (finding
// id, folder, found when and on which backend, sequence seed, reproduced k/n, hits), and the
// expectations of every backend, measured now. `expect` is sim's outcome and `expect.cuda` is
// cuda's where it differs, as in the seed's table; a backend that cannot run here (cuda without a
// device) keeps the finding's observation when it was found there, or is named in a note. The
// file carries no backend directive: the corpus runs on every backend. Nothing is written when
// the finding does not reproduce on its own backend (exit 1), when the target exists (without
// --force) or when the input is not a finding (exit 2).
#include <algorithm>
#include <cstdio>
#include <map>
#include <regex>

#include "base/InputError.h"
#include "harness/base/AtomicFile.h"
#include "harness/base/Json.h"
#include "harness/base/ModelFile.h"
#include "harness/base/RunConfig.h"
#include "harness/campaign/FindingStore.h"
#include "harness/cli/Subcommands.h"
#include "harness/search/Minimize.h"
#include "harness/search/Shrinker.h"
#include "renderer/device/DeviceError.h"
#include "renderer/faults/FaultPlan.h"

namespace gpufuzz {

namespace {

/// The finding's folder for a FINDING argument: the folder itself or its minimal.seq.
StoredFinding findingAt(const std::filesystem::path& input) {
  if (!std::filesystem::exists(input))
    throw InputError(input.string() + ": no such file or folder");
  const bool isFolder = std::filesystem::is_directory(input);
  const auto dir = isFolder ? input : input.parent_path();
  const auto stored =
      (isFolder || input.filename() == "minimal.seq") ? readStoredFinding(dir) : std::nullopt;
  if (!stored) {
    throw InputError(input.string() +
                     ": not a finding (give a finding's folder, like findings/hang-create-1a2b3c, "
                     "or its minimal.seq; the folder holds minimal.seq, finding.json and "
                     "signature)");
  }
  return *stored;
}

std::filesystem::path targetFile(const CommandLine& cl, const StoredFinding& finding) {
  std::string name = cl.value<Option::Name>().value_or(finding.id);
  if (!std::regex_match(name, std::regex("[A-Za-z0-9][A-Za-z0-9._-]*"))) {
    throw InputError("--name: '" + name +
                     "' is not a file name (letters, digits, '.', '_' and '-'; no folders: "
                     "--corpus says where)");
  }
  if (!name.ends_with(".seq")) name += ".seq";
  const auto target = std::filesystem::path(cl.value<Option::Corpus>()) / name;
  if (std::filesystem::exists(target) && !cl.value<Option::Force>()) {
    throw InputError(target.string() +
                     ": exists already (--force replaces it, --name NAME picks "
                     "another name)");
  }
  return target;
}

/// The `faults` directive as seen from the corpus file: a plan file's path made relative to it.
std::optional<std::string> faultsFrom(const RunConfig& config,
                                      const std::filesystem::path& target) {
  if (config.faults.empty()) return std::nullopt;
  const auto builtins = builtinPlanNames();
  if (std::find(builtins.begin(), builtins.end(), config.faults) != builtins.end()) {
    return config.faults;
  }
  return std::filesystem::proximate(std::filesystem::absolute(config.faults),
                                    std::filesystem::absolute(target.parent_path()))
      .string();
}

}  // namespace

int runPromote(Session& session) {
  const CommandLine& cl = session.commandLine();
  const StoredFinding finding = findingAt(cl.files.front());
  const std::string minimalFile = (finding.dir / "minimal.seq").string();
  const Sequence minimal = loadSequence(minimalFile, session.model());
  if (!minimal.directives.expect) {
    throw InputError(minimalFile + ": has no `expect` directive: not a finding's minimal sequence");
  }
  // A finding made with a target (its `target` directive, or --target) is measured on it alone.
  const TargetCommand* targetProgram = session.targetFor(minimal, minimalFile);
  const std::string foundOn =
      targetProgram ? Session::kTargetBackend
                    : minimal.directives.backend.value_or(std::string(kReferenceBackend));
  const Expectation observed = minimal.expectationFor(foundOn);
  const auto target = targetFile(cl, finding);
  RunConfig config = resolveRunConfig(RunOverrides{}, minimal.directives, minimalFile);
  checkFaultPlan(config, foundOn, minimal, minimalFile);  // before any backend runs it

  // Every backend that can run here is measured; the finding's own must still fail as found.
  std::map<std::string, Expectation> expected;
  std::vector<std::string> measured;
  std::vector<std::string> unusable;  // "opencl (why)"
  std::vector<std::string> candidates;
  if (targetProgram) candidates.push_back(foundOn);
  // A runtime model runs only on the backends that execute it.
  const bool runtimeModel = minimal.lifecycle().builtin && isRuntimeModel(minimal.lifecycle().name);
  for (const BackendInfo& info : backendRegistry()) {
    if (targetProgram) continue;
    if (runtimeModel && !backendRunsModel(info.name, minimal.lifecycle().name)) continue;
    candidates.emplace_back(info.name);
  }
  for (const std::string& backend : candidates) {
    if (!targetProgram) {
      if (!backendInfo(backend).built) continue;
      try {
        session.resolveBackend(backend);
      } catch (const DeviceUnavailable&) {
        unusable.push_back(backend);
        continue;
      }
    }
    TrialRunner& trials = session.trials(backend, config.policy, faultsFor(config, backend),
                                         targetProgram, minimal.lifecycle().name);
    // A threaded finding fails on some schedules: the tries that see its rate with 95% odds.
    const uint32_t tries =
        minimal.threadCount() > 1 ? triesForRate(finding.reproduced, finding.confirmations) : 1;
    const TrialResult t = trials.runTries(
        minimal, TrialMode::Confirmed, std::nullopt, tries,
        [&](const TrialResult& r) {
          return backend == foundOn ? r.outcome.meets(observed) : r.outcome.failed();
        },
        config.firstTry);
    if (t.harnessError) {
      std::fprintf(stderr, "gpufuzz: the harness failed on %s: %s\n", backend.c_str(),
                   t.harnessError->c_str());
      return Session::stopRequested() ? 130 : 3;
    }
    if (backend == foundOn && !t.outcome.meets(observed)) {
      std::fprintf(stderr,
                   "gpufuzz: %s did not reproduce on %s: %s (found as %s, reproduced %u/%u): "
                   "nothing promoted; a corpus file must fail the same way every time\n",
                   finding.id.c_str(), backend.c_str(), outcomeText(t.outcome).c_str(),
                   expectationText(observed).c_str(), finding.reproduced, finding.confirmations);
      return 1;
    }
    expected[backend] = backend == foundOn ? observed : expectationOf(t.outcome);
    measured.push_back(backend);
  }
  if (!expected.count(foundOn)) expected[foundOn] = observed;

  Sequence promoted = minimal;
  Directives& d = promoted.directives;
  d.backend.reset();
  if (targetProgram) d.target = targetProgram->text();
  d.faults = faultsFrom(config, target);
  const std::string base = targetProgram ? foundOn : std::string(kReferenceBackend);
  d.expect = expected.at(base);
  d.expectOn.clear();
  for (const auto& [backend, e] : expected) {
    if (backend != base && !(e == expected.at(base))) d.expectOn[backend] = e;
  }
  const std::string today = utcTimeText(unixNow());
  d.notes.push_back("promoted " + today + " from finding " + finding.id + " (" +
                    finding.dir.string() + ")");
  d.notes.push_back(
      "found " + (finding.foundAt.empty() ? "at an unrecorded time" : finding.foundAt) + " on " +
      foundOn + ", sequence seed " + std::to_string(finding.seed) + ", reproduced " +
      std::to_string(finding.reproduced) + "/" + std::to_string(finding.confirmations) + ", " +
      std::to_string(finding.hits) + " hit(s)");
  std::string on;
  for (const std::string& b : measured)
    on += (on.empty() ? "" : " and ") + b;
  for (const std::string& b : unusable) {
    on += foundOn == b ? "; " + b + "'s as found (not usable here)"
                       : "; " + b +
                             " not measured (not usable here): its corpus run tells "
                             "whether it needs expect." +
                             b;
  }
  d.notes.push_back("expectations measured on " + on);
  if (minimal.threadCount() > 1) {
    d.notes.push_back("threaded: fails in " + std::to_string(finding.reproduced) + " of " +
                      std::to_string(finding.confirmations) +
                      " schedules; replay gives it up to --confirmations tries (" +
                      optionDefaultFor(Option::Confirmations, "replay") + ")");
  }
  writeFileAtomically(target, printSequence(withPortableModel(promoted, target.parent_path())));

  std::string perBackend;
  for (const auto& [backend, e] : d.expectOn) {
    perBackend += "\n  expect." + backend + ": " + expectationText(e);
  }
  std::printf("promoted %s to %s\n  expect: %s%s\n  replay: gpufuzz replay %s\n",
              finding.id.c_str(), target.c_str(), expectationText(*d.expect).c_str(),
              perBackend.c_str(), target.c_str());
  return 0;
}

}  // namespace gpufuzz
