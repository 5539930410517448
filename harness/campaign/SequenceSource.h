// SequenceSource.h: which sequences a campaign runs (docs/search.md). Each index of its seed
// stream runs the stream's own sequence, as generateSequence draws it from the index's seed, under
// either search. Guided search (--search guided) adds to that:
// - the --seeds files first, one an index, in the order given;
// - after each of the stream's sequences, a mutant of a kept sequence (SearchQueue), drawn with
//   the odds that fresh generation stopped adding signals: of the last 32 fresh runs, the share
//   that added none. Early on most fresh runs add signals and few mutants run; once the stream
//   stops finding new behaviour, one mutant follows each of its sequences;
// - every run's signals are offered to the queue, which keeps the passing runs that added one.
// Mutants take no index of the stream: every sequence blind search runs, guided search runs too.
// Thread-safe: `mutex_` guards the record of fresh runs; the queue holds its own lock.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "harness/campaign/SearchQueue.h"
#include "model/Generator.h"

namespace gpufuzz {

class SequenceSource {
 public:
  /// Blind: `queueDir` empty and no seeds. Guided: the queue in `queueDir`, read back when a
  /// campaign ran there before.
  SequenceSource(const GeneratorConfig& gen, bool guided, std::vector<Sequence> seeds,
                 const std::filesystem::path& queueDir);

  struct Drawn {
    Sequence seq;
    /// The kept sequence it is a mutant of, when it is one.
    std::optional<uint64_t> parent;
  };
  /// The sequence at shard counter `k`, whose stream seed is `seqSeed`.
  Drawn draw(uint64_t k, uint64_t seqSeed) const;
  /// How many mutants to run after the stream's sequence of seed `seqSeed`: 0 or 1.
  uint32_t mutantsAfter(uint64_t seqSeed) const;
  /// A mutant of a kept sequence, drawn from `seed`; nullopt under blind search or while the
  /// queue is empty.
  std::optional<Drawn> mutant(uint64_t seed) const;
  /// A run of `drawn` that ended with `result`: its signals go to the queue (guided only).
  void observe(const Drawn& drawn, const TrialResult& result);

  bool guided() const { return guided_; }
  std::size_t signals() const { return queue_->signals(); }
  std::size_t queued() const { return queue_->size(); }
  std::vector<std::string> answers() const { return queue_->answers(); }

 private:
  static constexpr std::size_t kRecentFresh = 32;
  const GeneratorConfig& gen_;
  std::vector<Sequence> seeds_;
  bool guided_;
  /// Under blind search it counts signals and keeps nothing, so both searches measure alike.
  std::unique_ptr<SearchQueue> queue_;
  mutable std::mutex mutex_;
  /// The last kRecentFresh fresh runs: bit i set when run i added no signal.
  uint64_t stale_ = 0;
  std::size_t recent_ = 0;  // fresh runs recorded, up to kRecentFresh
};

}  // namespace gpufuzz
