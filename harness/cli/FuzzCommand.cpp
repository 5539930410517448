// FuzzCommand.cpp: `gpufuzz fuzz`: the command line read into a campaign plan
// (campaign/Campaign.h), the campaign run, and its summary printed; with --html, the folder's
// HTML report rewritten every 5 minutes and once at the end.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "base/InputError.h"
#include "harness/base/OutsideText.h"
#include "harness/base/RunConfig.h"
#include "harness/campaign/Campaign.h"
#include "harness/campaign/ReportFile.h"
#include "harness/campaign/SeedStream.h"
#include "harness/campaign/StatsFile.h"
#include "harness/cli/Subcommands.h"
#include "model/Generator.h"
#include "renderer/faults/FaultPlan.h"

namespace gpufuzz {

namespace {

/// "ops renderer" for a built-in model (as --ops names it), "model streams (FILE)" otherwise.
std::string modelLabel(const LifecycleModel& model) {
  if (model.builtin) return "ops " + model.name;
  return "model " + model.name + " (" + model.source + ")";
}

/// --seeds PATH and the words after it: sequence files, and the .seq files under folders, in
/// order, each read in the campaign's model; bad input before anything runs.
std::vector<Sequence> seedSequences(const CommandLine& cl, const LifecycleModel& model,
                                    bool guided) {
  const std::optional<std::string> first = cl.value<Option::Seeds>();
  if (!first && !cl.files.empty()) {
    throw InputError("'fuzz' takes no files: '" + cl.files.front() +
                     "' (sequence files that start guided search follow --seeds)");
  }
  if (!first) return {};
  if (!guided) throw InputError("--seeds starts guided search's queue: it needs --search guided");
  std::vector<std::string> paths{*first};
  paths.insert(paths.end(), cl.files.begin(), cl.files.end());
  std::vector<Sequence> seeds;
  for (const std::string& given : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(given, ec)) {
      seeds.push_back(loadSequenceOf(given, model));
      continue;
    }
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(given, ec)) {
      if (e.is_regular_file() && e.path().extension() == ".seq") files.push_back(e.path());
    }
    if (files.empty()) throw InputError(given + ": --seeds: no .seq file in this folder");
    std::sort(files.begin(), files.end());
    for (const auto& f : files)
      seeds.push_back(loadSequenceOf(f.string(), model));
  }
  return seeds;
}

/// --persistent with what cannot run several sequences in one process: bad input.
void checkPersistent(const Session& session, unsigned persistent, const TargetCommand* target) {
  if (persistent > 1 && target) {
    throw InputError("--persistent " + std::to_string(persistent) +
                     ": a target of target.md runs one sequence per process (or fork); "
                     "--persistent is the project's runner's");
  }
  if (persistent > 1 && session.sanitizer().tool != SanitizerTool::None) {
    throw InputError("--persistent " + std::to_string(persistent) +
                     " with --sanitizer: the sanitizer's report covers a whole process, so each "
                     "sequence runs in one of its own");
  }
}

/// "for 60 s" or "1000 runs", and the shard's part of them: for the campaign's first line.
std::string budgetText(std::optional<std::chrono::seconds> time, std::optional<uint64_t> runs,
                       const Shard& shard) {
  std::string budget =
      time ? "for " + std::to_string(time->count()) + " s" : std::to_string(*runs) + " runs";
  if (shard.count > 1) {
    budget += ", shard " + shardText(shard) +
              (runs ? " (" + std::to_string(shardRuns(shard, *runs)) + " of them)" : "");
  }
  return budget;
}

/// The summary of a campaign that ran, the --report and --html files, and the exit status: 1
/// when a failure stands, 3 when the harness or the disk failed.
int finished(const CampaignPlan& plan, const CampaignResult& result,
             const std::filesystem::path& folder,
             const std::optional<std::filesystem::path>& page) {
  if (plan.reportFile) writeReport(*plan.reportFile, result.report);
  std::printf("\n%s%s\n%zu unique finding(s) this run; seed %llu\n",
              Session::stopRequested() ? "stopped: " : "done: ", result.statusLine.c_str(),
              result.uniqueFindings, static_cast<unsigned long long>(plan.seed));
  std::fflush(stdout);
  if (page && writeHtmlReportOrWarn(folder, *page)) std::printf("report: %s\n", page->c_str());
  if (!result.unsupported.empty()) {
    throw InputError("the target cannot run model " + plan.gen.model->name + ": " +
                     result.unsupported +
                     "; give it a handler for that, or fuzz a model it implements");
  }
  if (result.harnessBroken) {
    std::fprintf(stderr, "gpufuzz: stopped: most runs failed in the harness itself\n");
    return 3;
  }
  if (!result.writeFailure.empty()) {
    // Not bad input (exit 2 says nothing ran): the harness could not keep its record. Every
    // finding written before is whole; the sequences cut short run again on --time resume.
    std::fprintf(stderr, "gpufuzz: stopped: %s\n", result.writeFailure.c_str());
    return 3;
  }
  return result.failuresFound > 0 ? 1 : 0;
}

}  // namespace

int runFuzz(Session& session) {
  const CommandLine& cl = session.commandLine();
  const TargetCommand* target = session.commandLineTarget();
  const std::string backend = target ? Session::kTargetBackend
                                     : session.resolveBackend(session.backendRequest(
                                           cl.value<Option::Backend>(), session.fuzzModel()));
  const RunConfig config =
      resolveRunConfig(RunOverrides{target ? std::nullopt : std::optional<std::string>(backend),
                                    cl.get(Option::Policy), cl.get(Option::Faults),
                                    session.backendOptions(), session.schedule()},
                       Directives{}, "");
  const std::string faults = faultsFor(config, backend);
  loadFaultPlan(faults);  // a bad plan is bad input: fail before anything runs
  GeneratorConfig gen;
  gen.model = &session.fuzzModel();
  session.checkExecutable(*gen.model, target, backend, faults);
  checkDeviceMemory(session.backendOptions(), backend);
  gen.maxOps = static_cast<uint32_t>(cl.value<Option::MaxOps>());
  gen.threads = static_cast<unsigned>(cl.value<Option::Threads>());
  gen.inject = injectedWords(cl.value<Option::Inject>(), backend, gen.model);
  gen.injectRate = static_cast<uint32_t>(cl.value<Option::InjectRate>());
  const bool guided = cl.value<Option::Search>() == "guided";
  std::vector<Sequence> seeds = seedSequences(cl, *gen.model, guided);
  const std::optional<std::string> shardGiven = cl.value<Option::Shard>();
  const Shard shard = shardGiven ? parseShard(*shardGiven) : Shard{};
  if (shardGiven && !cl.has(Option::Seed)) {
    throw InputError("--shard " + *shardGiven +
                     " needs --seed N, the same for every shard: shards of different seeds "
                     "would not be disjoint");
  }
  const uint64_t seed = cl.value<Option::Seed>().value_or(
      static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) ^
      static_cast<uint64_t>(::getpid()));
  std::optional<uint64_t> runs = cl.value<Option::Runs>();
  const std::optional<std::chrono::seconds> time = cl.value<Option::Time>();
  if (time && !cl.has(Option::Runs)) runs.reset();
  const unsigned persistent = session.persistent();
  checkPersistent(session, persistent, target);
  FindingStore store(cl.value<Option::Out>());
  // A campaign in a folder where campaigns ran before continues their counts.
  std::optional<CampaignStats> previous = ownStats(store.root());
  TrialRunner& trials = session.trials(backend, config.policy, faults, target, gen.model->name);
  const std::string description =
      target ? target->text() + (target->version.empty() ? "" : ", " + target->version)
             : session.backendDescription(backend);

  const std::string budget = budgetText(time, runs, shard);
  std::string children;
  if (persistent > 1) children += ", persistent " + std::to_string(persistent);
  if (session.freshJobs() < session.jobs())
    children += ", shrinks " + std::to_string(session.freshJobs()) + " at once";
  std::printf("gpufuzz fuzz: seed %llu, backend %s (%s), policy %s, faults %s, %s, jobs %u%s, %s\n",
              static_cast<unsigned long long>(seed), backend.c_str(), description.c_str(),
              std::string(policyName(config.policy)).c_str(), faults.c_str(),
              modelLabel(*gen.model).c_str(), session.jobs(), children.c_str(), budget.c_str());
  std::printf("findings in %s (%zu known)\n", store.root().c_str(), store.size());
  if (previous) {
    std::printf(
        "continuing the counts of %llu earlier campaign(s): %llu executions, %llu "
        "sequences\n",
        static_cast<unsigned long long>(previous->cumulative.campaigns),
        static_cast<unsigned long long>(previous->cumulative.executions),
        static_cast<unsigned long long>(previous->cumulative.sequences));
  }
  std::fflush(stdout);

  CampaignPlan plan;
  plan.guided = guided;
  plan.seeds = std::move(seeds);
  plan.gen = gen;
  plan.seed = seed;
  plan.shard = shard;
  plan.runs = runs;
  plan.time = time;
  plan.grace = cl.value<Option::Grace>();
  plan.deviceDescription = outsideLine(description);  // the runtime's words: outside text
  plan.confirmations = static_cast<uint32_t>(cl.value<Option::Confirmations>());
  plan.explain = !cl.value<Option::NoExplain>();
  plan.reportFile = cl.value<Option::Report>();
  plan.jobs = session.jobs();
  plan.freshJobs = session.freshJobs();
  plan.persistent = persistent;
  plan.quiet = session.quiet();
  plan.stopRequested = &Session::stopRequested;
  const std::optional<std::filesystem::path> page = htmlReportOption(cl, std::nullopt);
  if (page) {
    plan.periodic = [dir = store.root(), file = *page] { writeHtmlReportOrWarn(dir, file); };
  }
  CampaignStats& identity = plan.identity;
  identity.folder = std::filesystem::weakly_canonical(store.root()).string();
  identity.commandLine = cl.asTyped;
  identity.pid = ::getpid();
  identity.seed = seed;
  if (shardGiven) identity.shard = shard;
  identity.backend = backend;
  identity.device = description;
  if (target) {
    identity.target = target->text();
    identity.targetVersion = target->version;
  }
  identity.policy = std::string(policyName(config.policy));
  identity.faults = faults;
  identity.ops = cl.value<Option::Ops>();
  identity.threads = gen.threads;
  identity.persistent = persistent;
  plan.previous = std::move(previous);
  const CampaignResult result = runCampaign(plan, trials, store);
  return finished(plan, result, store.root(), page);
}

}  // namespace gpufuzz
