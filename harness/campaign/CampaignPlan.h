// CampaignPlan.h: what a campaign is asked to do: its seed stream, budget, children, search and
// hooks. `gpufuzz fuzz` (cli/FuzzCommand.cpp) reads the command line into one; runCampaign
// (Campaign.h) runs it, and each part of the campaign reads the settings it needs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/campaign/SeedStream.h"
#include "harness/campaign/StatsFile.h"
#include "model/Generator.h"

namespace gpufuzz {

struct CampaignPlan {
  GeneratorConfig gen;
  uint64_t seed = 0;
  Shard shard;
  /// The budget: a number of sequences of the stream, a time, or both (the first spent ends it).
  std::optional<uint64_t> runs;
  std::optional<std::chrono::seconds> time;
  /// With `time`: how long a shrink under way when it is spent may go on; then it is cut short
  /// and saved marked so.
  std::chrono::seconds grace{300};
  /// What the backend runs on (platform, device, driver), for the report and each finding.
  std::string deviceDescription;
  uint32_t confirmations = 5;             // replays of each new minimal sequence
  bool explain = true;                    // explanation.md for each new finding
  std::optional<std::string> reportFile;  // --report: refreshed as findings arrive
  unsigned jobs = 1;                      // concurrent children
  /// Concurrent fresh children of a shrink, its confirmations and an explanation (at most
  /// `jobs`; 0: `jobs`): fewer where the driver starts processes one at a time
  /// (Session::freshJobs).
  unsigned freshJobs = 0;
  /// --persistent N: each worker's child runs up to N sequences in one process; a failure
  /// there is re-run in a fresh process, alone and then after the sequences before it.
  unsigned persistent = 1;
  bool quiet = false;  // no status, no per-finding messages
  /// --search guided: runs that add a signal are kept in <out>/queue and mutated
  /// (SequenceSource.h); false: only the seed stream's sequences run.
  bool guided = false;
  /// --seeds: sequences run first under guided search, in order.
  std::vector<Sequence> seeds;
  /// Called every `periodicEvery` while the campaign runs, on a thread of its own, so that a
  /// slow call (the HTML report) delays nothing else; an exception it throws is dropped.
  std::function<void()> periodic;
  std::chrono::seconds periodicEvery{300};
  std::function<bool()> stopRequested;
  /// What stats.json says of this campaign, and the folder's earlier stats (a campaign in a
  /// folder where campaigns ran before continues their counts, and a time-bounded one of the
  /// same stream goes on at its next_sequence).
  CampaignStats identity;
  std::optional<CampaignStats> previous;
};

}  // namespace gpufuzz
