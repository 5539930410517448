// Finding.h: a failure found, shrunk and confirmed: what the search hands to whoever keeps it
// (the campaign's findings folder, a report). Its signature (class, kind of operation, the
// minimal sequence's normalized text) says which findings are the same bug; its id names its
// folder.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/base/Json.h"
#include "harness/base/RunOutcome.h"
#include "harness/supervise/Supervisor.h"
#include "model/Sequence.h"

namespace gpufuzz {

struct Finding {
  RunOutcome outcome;    // the minimal sequence's failure
  Sequence minimal;      // with backend, policy, faults, seed and expect directives
  std::string original;  // the sequence as generated, as text
  uint64_t seed = 0;     // the sequence seed that first found it
  uint64_t executionsToFind = 0;
  uint64_t executionsToShrink = 0;
  uint32_t reproduced = 0;
  uint32_t confirmations = 0;
  /// A stop (Ctrl-C, SIGTERM, a campaign's time and grace spent) cut its shrink or confirmation
  /// short: `minimal` is the best so far and `reproduced`/`confirmations` count nothing.
  bool stopped = false;
  /// Its shrink ended early, to leave the rest of a campaign's grace to its confirmations
  /// (TrialRunner::shrinkUntil) or to give queued failures their turn (Shrinker::endTurnWhen):
  /// `minimal` reproduces but may not be 1-minimal.
  bool shrinkCutShort = false;
  /// Shrink candidates killed unjudged (ShrinkResult::candidatesCancelled).
  uint64_t shrinkCandidatesCancelled = 0;
  /// What makes findings one bug (search/Cause.h); empty for findings made without it.
  std::string cause;
  uint64_t hits = 1;
  std::string foundAt;  // UTC (utcTimeText); set when first recorded
  /// Made with --target (the minimal sequence's `target` directive): what its --version said.
  std::string targetVersion;
  std::string stacks;
  std::string outputTail;
  std::vector<std::string> shrinkSteps;
  /// The confirmation run of `minimal` whose evidence it keeps: each completed operation's
  /// time and deadline, and the operation it was stuck in (hang, spin); empty when no
  /// confirmation reproduced it.
  std::vector<OpTiming> timings;
  std::optional<OpTiming> stuckOp;

  /// class, op and normalized operations: what makes two findings the same bug.
  std::string signature() const;
  /// "hang-create-1a2b3c": the folder's name.
  std::string id() const;
  /// "reproduced 4/5", or "not confirmed (stopped)" when a stop came first.
  std::string reproductionText() const;
};

/// The fields a finding has in finding.json and in a report's `findings` (inside an object).
void writeFindingFields(JsonWriter& j, const Finding& f, const std::string& file);

/// FNV-1a, 64 bits: a stable short hash for folder names.
uint64_t stableHash(std::string_view text);

}  // namespace gpufuzz
