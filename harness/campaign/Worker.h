// Worker.h: one of a campaign's --jobs workers. It takes the next sequence of the seed stream
// (SeedSchedule.h), runs it in a child, and after it, under guided search, the mutants
// SequenceSource.h draws; each failure goes to the Examiner.
//
// The contract:
// - Fuzzing runs are quick: a stuck run is a hang or a spin at once. A miss is confirmed under
//   the long deadline before it counts, unless its kind is saturated or confirmed already, or
//   another worker confirms it now (Triage::awaitVerdict).
// - With --persistent, a failure in the worker's long-lived child is re-run in a fresh process,
//   alone and then after the sequences before it, unless triage counts it as a known cause's
//   hit first (Triage::persistentHit).
// - A sequence is done once its failure is handled; one a stop cuts short stays unfinished.
// - The worker stops at a stop, a broken harness, or a target that cannot run the model.
//
// Owns no lock: its state is its own thread's (the persistent child); the parts it shares each
// hold their own.
#pragma once

#include <cstdint>
#include <optional>

#include "harness/campaign/CampaignPlan.h"
#include "harness/campaign/Examiner.h"
#include "harness/campaign/FindingStore.h"
#include "harness/campaign/RunCounts.h"
#include "harness/campaign/SeedSchedule.h"
#include "harness/campaign/SequenceSource.h"
#include "harness/campaign/StatusBoard.h"
#include "harness/campaign/Stops.h"
#include "harness/campaign/Triage.h"

namespace gpufuzz {

class Worker {
 public:
  /// The parts it shares with the other workers.
  struct Parts {
    SeedSchedule& schedule;
    SequenceSource& source;
    Stops& stops;
    Triage& triage;
    Examiner& examiner;
    StatusBoard& board;
    RunCounts& counts;
  };
  Worker(const CampaignPlan& plan, TrialRunner& trials, FindingStore& store, Parts parts);

  /// Runs sequences until the budget is spent or the campaign stops.
  void work();

 private:
  bool runOne(uint64_t k, SequenceSource::Drawn drawn, uint64_t seqSeed);
  TrialResult classified(const Sequence& seq, TrialResult t);
  std::size_t rerunFresh(Sequence& failing, TrialResult& t, bool& hit,
                         const std::string& underCrash);
  void count(bool mutant, OutcomeClass cls, bool stands);

  /// A mutant's place in the stream: none. Counted apart from the stream's sequences, and never
  /// left unfinished for a resumed campaign.
  static constexpr uint64_t kMutant = UINT64_MAX;

  const CampaignPlan& plan_;
  TrialRunner& trials_;
  FindingStore& store_;
  Parts parts_;
  std::optional<PersistentRuns> persistent_;
};

}  // namespace gpufuzz
