// StatsFile.h: a campaign's stats file, <out>/stats.json, in the spirit of AFL's fuzzer_stats:
// machine-readable, rewritten atomically about once a second while the campaign runs and once
// more when it ends (`finished`, or `stopped` when cut short). It says who runs (pid, command line,
// start and last update), on what (seed, shard, backend, policy, faults, ops), how fast
// (executions, execs/s), what came out (sequences by outcome class, standing failures, unique
// findings, time of the last find), and what it is doing (the deadline in force, the current
// shrink). `cumulative` sums every campaign run in the folder: a campaign resumed in the same --out
// continues it. `gpufuzz merge` writes a stats.json of the same shape whose counts sum its sources
// (`merged_from`); the last stats of each source are kept under <out>/merged/, and the folder's
// own campaign stats as merged/self.json, so merging again recomputes instead of adding twice.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/campaign/SeedStream.h"
#include "model/Outcome.h"

namespace gpufuzz {

/// The stats file's name inside a findings folder.
inline constexpr const char* kStatsFile = "stats.json";

/// What adds up across campaign runs and shards.
struct CampaignCounts {
  uint64_t campaigns = 0;  // campaign runs counted
  uint64_t executions = 0;
  uint64_t sequences = 0;
  /// Runtime calls the runs made, and those begun while another thread of the same process was
  /// inside a runtime call (docs/sequences.md, Threads on real runtimes).
  uint64_t calls = 0;
  uint64_t callsOverlapped = 0;
  std::array<uint64_t, kOutcomeClassCount> byClass{};  // by OutcomeClass
  uint64_t failures = 0;                               // failures that stand (noise left out)
  uint64_t unconfirmed = 0;  // failures whose minimal sequence never reproduced
  /// Deadline misses re-run under the long deadline, and misses of a kind already confirmed as
  /// a finding taken without that (TrialRunner::markConfirmedKind).
  uint64_t longConfirmations = 0;
  uint64_t confirmationsSkipped = 0;
  uint64_t harnessErrors = 0;
  /// --persistent: runs in a persistent child that did not pass, each re-run in a fresh
  /// process; of those, how many did the same there alone (AFL's stability: the share of
  /// them), and how many failed only after the sequences run before them in that process.
  uint64_t persistentFailures = 0;
  uint64_t persistentSame = 0;
  uint64_t persistentNeededHistory = 0;
  /// The tally: causes confirmed and bucketed (a shrink finished and reproduced), variants (a
  /// known cause's minimal sequence at another operation), failures triage counted as a known
  /// cause's hits without a shrink, and failures no finished shrink examined (a stop came
  /// first), by class.
  uint64_t confirmedCauses = 0;
  uint64_t variants = 0;
  uint64_t triageHits = 0;
  /// With --persistent: failures queued for the examining worker while their own went on.
  uint64_t queuedFailures = 0;
  uint64_t unexamined = 0;
  std::array<uint64_t, kOutcomeClassCount> unexaminedByClass{};
  double runTimeSeconds = 0;

  CampaignCounts& operator+=(const CampaignCounts& other);
};

struct CampaignStats {
  std::string folder;  // the findings folder it describes
  std::string commandLine;
  int64_t pid = 0;
  int64_t startTime = 0;  // Unix seconds
  int64_t lastUpdate = 0;
  std::optional<int64_t> lastFind;
  std::optional<uint64_t> seed;  // unset in a merge of several seeds
  std::optional<Shard> shard;
  /// The next sequence (its k-th, stream index I + k*N) this shard's campaigns in the folder
  /// have not begun, and those before it begun and not run to the end (cut short by a stop):
  /// a time-bounded campaign of the same seed and settings resumed in this folder runs these
  /// first, then goes on at nextSequence.
  std::optional<uint64_t> nextSequence;
  std::vector<uint64_t> unfinished;
  std::string backend, policy, faults, ops;
  /// What the backend runs on (platform, device, driver), as the runner's --probe says.
  std::string device;
  /// Children started on each GPU of a session spread over several ("0: 12, 1: 11"); empty with
  /// one GPU.
  std::string childrenByGpu;
  uint64_t persistent = 1;  // --persistent N: sequences a child may run in one process
  uint64_t threads = 1;     // --threads N: each sequence's operations over up to N threads
  /// --search: "guided" or "blind"; the distinct signals the folder's campaigns saw, under either
  /// search, and with guided the sequences kept in its queue (docs/search.md).
  std::string search;
  uint64_t signals = 0;
  uint64_t queue = 0;
  /// The distinct error codes and checker rules the runs' answers named: CL_..., VUID-...
  std::vector<std::string> answers;
  uint64_t mutants = 0;  // this run's mutants, which the stream's counts leave out
  /// --target's command line and what its --version said; empty for the project's runner.
  std::string target, targetVersion;
  std::string deadline;  // the deadline in force
  /// Each kind's deadline, p99 and samples; then the kinds under the overall one (describeKinds)
  std::string deadlineByKind;
  std::string shrinking;  // the current shrink or explanation; empty when none
  double execsPerSecond = 0;
  uint64_t uniqueFindings = 0;  // in the folder
  uint64_t newFindings = 0;     // this run's
  /// Set when the campaign ends: finished when it spent its --runs or --time; stopped (and
  /// why) when a stop, its --time and --grace, or a broken harness cut it short.
  bool finished = false;
  bool stopped = false;
  std::string stopReason;
  CampaignCounts run;                   // this run (a merge: the sources' last runs)
  CampaignCounts cumulative;            // every run in the folder, this one included
  std::vector<std::string> mergedFrom;  // a merge's sources; empty for a campaign's file
};

std::string statsJson(const CampaignStats& stats);
/// Parses a stats file; InputError naming it when it is malformed.
CampaignStats parseStats(const std::string& json, const std::string& where);
/// The stats at `path`, or nullopt when there is no such file; InputError when malformed.
std::optional<CampaignStats> readStats(const std::filesystem::path& path);
void writeStats(const std::filesystem::path& path, const CampaignStats& stats);

/// The stats of the campaigns that ran in `folder` itself: its stats.json, or merged/self.json
/// when stats.json is a merge's; nullopt when none ran there.
std::optional<CampaignStats> ownStats(const std::filesystem::path& folder);

/// The stats of several folders as one: counts and rates summed, the earliest start, the
/// latest update and find, the settings they share (or all of them, comma-separated).
CampaignStats mergedStats(const std::vector<CampaignStats>& parts);

}  // namespace gpufuzz
