// SeedSchedule.h: which sequence of the seed stream (SeedStream.h) each worker runs next, which
// are begun and not done, and where a failing sequence came from.
//
// The contract:
// - take() hands out shard counters: first those an earlier campaign left unfinished, then the
//   stream's from where it stopped (startAt), until --runs is spent.
// - A counter stays unfinished until done(): a resumed campaign runs it again. One cut short by
//   a stop is never done.
// - The next sequence stats.json names (nextSequence) never goes back: an earlier campaign's
//   frontier holds even when this one covers less of the stream (keepFrontier).
// - A failing mutant of guided search is noted with the kept sequence it came from, so that its
//   `found` directive names that, not a seed that does not generate it.
//
// Thread-safe: `mutex_` guards the counters, the unfinished set and the mutants' parents.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/campaign/SeedStream.h"

namespace gpufuzz {

class SeedSchedule {
 public:
  /// The stream of `seed`, shard `shard`; `runs`: the --runs budget, counted over all shards.
  SeedSchedule(uint64_t seed, Shard shard, std::optional<uint64_t> runs);

  /// Starts at the shard's k-th sequence, after the sequences an earlier campaign left
  /// unfinished (before any take()).
  void startAt(uint64_t k, const std::vector<uint64_t>& unfinished);
  /// The stream's earlier campaigns in this folder got to its k-th sequence and left
  /// `unfinished`: those stay unfinished until this run completes them.
  void keepFrontier(uint64_t k, const std::vector<uint64_t>& unfinished);

  /// The next shard counter, begun; nullopt once --runs is spent. The caller checks the stop.
  std::optional<uint64_t> take();
  void done(uint64_t k);
  /// The seed of the sequence at shard counter `k`.
  uint64_t seedOf(uint64_t k) const { return sequenceSeed(seed_, streamIndex(shard_, k)); }

  /// A failing mutant drawn from `seqSeed` was made from kept sequence `parent`.
  void mutantFailed(uint64_t seqSeed, uint64_t parent);
  /// The `found` directive of a failure of sequence `seqSeed`; `ranBefore`: how many sequences
  /// its persistent process ran before it and its failure needed.
  std::string foundText(uint64_t seqSeed, std::size_t ranBefore) const;

  /// Where a later campaign of this stream goes on: stats.json's next_sequence.
  uint64_t nextSequence() const;
  std::vector<uint64_t> unfinished() const;

 private:
  const uint64_t seed_;
  const Shard shard_;
  const std::optional<uint64_t> runs_;
  mutable std::mutex mutex_;
  uint64_t next_ = 0;
  std::set<uint64_t> redo_;        // left unfinished by an earlier campaign, not begun yet
  std::set<uint64_t> unfinished_;  // begun and not done, and redo_
  uint64_t startedUpTo_ = 0;
  uint64_t frontier_ = 0;
  std::map<uint64_t, uint64_t> mutantOf_;  // a failing mutant's seed -> its parent
};

}  // namespace gpufuzz
