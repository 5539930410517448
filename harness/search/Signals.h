// Signals.h: what a run showed of lifecycle behaviour, the feedback of guided search
// (docs/search.md). A closed runtime gives no code coverage, so a signal is what the harness sees
// on every backend and target:
// - state: an operation kind with the state of each name it uses at that moment (the name's
//   flags, its owner alive or ended, the live names it owns bucketed as 0, 1, 2, 3-4, 5+), and
//   how many times that state was met so far in the run, bucketed the same way;
// - pair: two operations in order on related names (the same name, or an owner and what it owns);
// - outcome: the class and operation of a failure, each runtime error code and checker rule (VUID)
//   its messages name, each failed and skipped operation, each fault-plan rule that fired;
// - near: each set of a fault-plan rule's conditions that held together at one call, and the
//   largest value each >= or > condition's counter reached, up to its threshold (sim), so that
//   search climbs toward a rule of several conditions one condition and one count at a time.
// - counts: how often each operation ran, and how many names of a kind lived at once (AFL's
//   buckets: 1, 2, 3, 4-7, 8-15, 16-31, 32+).
// Only operations the run reached count. A signal is a 64-bit hash of its text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/search/Trial.h"
#include "model/Sequence.h"

namespace gpufuzz {

/// One signal: its hash, and its text for people.
struct Signal {
  uint64_t hash = 0;
  std::string text;
};

/// How signals of two families begin: `answer OP WORD`, an error code or rule a failure named;
/// `near RULE: ...`, a fault-plan rule's conditions held together or a counter's climb.
inline constexpr std::string_view kAnswerSignal = "answer ";
inline constexpr std::string_view kNearSignal = "near ";

/// Every signal of the run of `seq` that gave `result`, each once, in the order met.
std::vector<Signal> signalsOf(const Sequence& seq, const TrialResult& result);

/// The hash of a signal's text.
uint64_t signalHash(std::string_view text);

/// Error codes and rules a message names: CL_..., CUDA_ERROR_..., VK_..., VUID-..., in order.
std::vector<std::string> answerWords(std::string_view message);

}  // namespace gpufuzz
