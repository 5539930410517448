// Campaign.h: a fuzzing campaign: sequences generated from a seed stream (or one shard of it),
// each run in a child with deadlines; each new failure confirmed, shrunk, deduplicated by
// signature, explained and written to the findings folder as it arrives; a status shown and
// <out>/stats.json rewritten about once a second. `gpufuzz fuzz` (cli/FuzzCommand.cpp) reads
// the command line into a CampaignPlan and runs it.
//
// Stops: once the budget (runs or time) is spent, as soon as `stopRequested` says so (every
// child has been killed by then), or when a file of it cannot be written (a full disk); a
// stopped campaign keeps every finding it reported.
#pragma once

#include <cstdint>
#include <string>

#include "harness/campaign/CampaignPlan.h"
#include "harness/campaign/FindingStore.h"
#include "harness/campaign/ReportFile.h"
#include "harness/search/Trial.h"

namespace gpufuzz {

struct CampaignResult {
  Report report;
  std::string statusLine;  // the last status, as one line
  std::size_t uniqueFindings = 0;
  uint64_t failuresFound = 0;
  bool harnessBroken = false;  // most runs failed in the harness itself
  /// A file of the campaign could not be written (a full disk): which, and why. The campaign
  /// stopped there; every finding written before is whole.
  std::string writeFailure;
  /// The target said it cannot run a sequence of the model (target.md): what it lacks.
  std::string unsupported;
};

CampaignResult runCampaign(const CampaignPlan& plan, TrialRunner& trials, FindingStore& store);

}  // namespace gpufuzz
