// RunCounts.h: what a campaign counts of its own runs, for stats.json, the status and the report.
//
// The contract:
// - Workers count the stream's sequences, by class, and guided search's mutants (Worker.h).
// - A failure counts in `failures` once it stands; the examiner takes it back when its shrink
//   finds it was noise.
// - Lock-free: each count is an atomic, read on its own. A reader of several counts sees each at
//   a slightly different instant, which a status shown once a second can bear.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "model/Outcome.h"

namespace gpufuzz {

struct RunCounts {
  std::atomic<uint64_t> sequences{0};                               // the stream's sequences done
  std::array<std::atomic<uint64_t>, kOutcomeClassCount> byClass{};  // those, by class
  std::atomic<uint64_t> mutants{0};                                 // guided search's mutants run
  std::atomic<uint64_t> failures{0};          // failures that stand (not noise, not cut short)
  std::atomic<uint64_t> failuresCutShort{0};  // failures of sequences a stop cut short
  std::atomic<uint64_t> harnessErrors{0};
  std::atomic<uint64_t> unconfirmed{0};  // minimal sequences that never reproduced: noise
  /// --persistent: failures re-run in a fresh process, those that failed the same way there, and
  /// those that needed the sequences their process ran before them.
  std::atomic<uint64_t> persistentFailures{0}, persistentSame{0}, persistentNeededHistory{0};
};

}  // namespace gpufuzz
