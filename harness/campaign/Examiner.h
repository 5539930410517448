// Examiner.h: what becomes of a failure a worker met. Triage may count it as a hit; otherwise it
// is confirmed, shrunk, recorded in the findings folder and handed to the FindingSink.
//
// The contract:
// - Triage comes first (Triage.h): a failure whose first run settles a known cause costs no
//   shrink.
// - A minimal sequence is replayed `confirmations` times. One that never reproduces was noise,
//   and its failure does not stand.
// - One shrink runs at a time, in the order Turns.h gives. With --persistent one worker examines
//   and drains the queue the others fill. It explains only once it has given up its place.
// - A kind is saturated when its last kSaturatedAfter shrinks found only known signatures. Its
//   failures are shrunk only at the 2^k-th hit; the others count as hits of the kind. So a
//   campaign where most sequences fail one way keeps exploring.
// - After a stop nothing new is shrunk. A shrink under way keeps its best sequence, marked so.
// - Once the shrink window closes, the grace confirms the shrinks under way. A failure whose run
//   settled its cause is then recorded unshrunk.
//
// Thread-safe: `mutex_` guards the kinds' hit and repeat counts and the activity shown. No other
// lock is taken while it is held.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "harness/campaign/CampaignPlan.h"
#include "harness/campaign/FindingSink.h"
#include "harness/campaign/FindingStore.h"
#include "harness/campaign/RunCounts.h"
#include "harness/campaign/SeedSchedule.h"
#include "harness/campaign/Stops.h"
#include "harness/campaign/Triage.h"
#include "harness/campaign/Turns.h"

namespace gpufuzz {

class Examiner {
 public:
  /// The parts it works with, each under its own lock.
  struct Parts {
    Triage& triage;
    Turns& turns;
    FindingSink& sink;
    SeedSchedule& schedule;
    const Stops& stops;
    RunCounts& counts;
    /// Told when a shrink or confirmation begins or ends, outside the examiner's lock.
    std::function<void()> activityChanged;
  };
  /// `freshJobs`: the children a shrink and its confirmations may run at once.
  Examiner(const CampaignPlan& plan, TrialRunner& trials, FindingStore& store, Parts parts,
           unsigned freshJobs);

  enum class Handled {
    Dropped,  // noise, or cut short by a stop
    Stands,   // a hit, or a finding recorded
    Queued,   // --persistent: the examining worker has it, and marks its sequence done
  };
  /// A failure of sequence `k` (drawn from `seqSeed`), as `seq` failed in a fresh process;
  /// `ranBefore`: how many sequences of a persistent process `seq` holds before the one drawn.
  Handled onFailure(const Sequence& seq, uint64_t seqSeed, const TrialResult& t,
                    std::size_t ranBefore, uint64_t k);
  /// Whether failures of `o`'s kind are saturated: its misses count without confirmation.
  bool saturated(const RunOutcome& o) const;
  /// "shrinking crash/buf_free" while a shrink runs; empty otherwise.
  std::string activity() const;

 private:
  bool examine(const Sequence& seq, uint64_t seqSeed, const TrialResult& t, std::size_t ranBefore,
               const Triaged& triaged, bool shrinkHeld, const std::vector<std::string>& claims);
  bool saturatedRepeat(const std::string& kind);
  bool settledMeanwhile(const Sequence& seq, uint64_t seqSeed, const TrialResult& t,
                        std::size_t ranBefore, const Triaged& triaged,
                        const std::vector<std::string>& claims);
  Finding shrunk(const Sequence& seq, uint64_t seqSeed, const TrialResult& t, std::size_t ranBefore,
                 const Triaged& triaged, bool unshrunk, bool& turnEnded);
  bool noteEnd(Finding& f, bool turnEnded);
  bool record(const Finding& f, const std::string& kind, const std::string& under,
              const std::vector<std::string>& claims);
  void setActivity(std::string text);
  void drainQueued();
  void endExaminer();
  void leaveUnexamined(const QueuedFailure& q);

  static constexpr uint32_t kSaturatedAfter = 3;

  const CampaignPlan& plan_;
  TrialRunner& trials_;
  FindingStore& store_;
  Parts parts_;
  const unsigned freshJobs_;
  mutable std::mutex mutex_;
  std::map<std::string, uint64_t> kindHits_;
  std::map<std::string, uint32_t> kindRepeats_;
  std::string shrinking_;
};

}  // namespace gpufuzz
