#include "harness/campaign/SequenceSource.h"

#include <algorithm>
#include <bit>
#include <memory>

#include "model/SplitMix.h"

namespace gpufuzz {

namespace {
/// Salts the index's seed for the choice of a mutant after it, so that the choice is independent
/// of what the seed generates.
constexpr uint64_t kMutateSalt = 0x6d75746174652121ULL;
}  // namespace

SequenceSource::SequenceSource(const GeneratorConfig& gen, bool guided, std::vector<Sequence> seeds,
                               const std::filesystem::path& queueDir)
    : gen_(gen), seeds_(std::move(seeds)), guided_(guided) {
  if (!guided) {
    queue_ = std::make_unique<SearchQueue>(std::filesystem::path{}, false);
    return;
  }
  queue_ = std::make_unique<SearchQueue>(queueDir);
  queue_->load(queueDir, gen.lifecycle());
}

SequenceSource::Drawn SequenceSource::draw(uint64_t k, uint64_t seqSeed) const {
  if (guided_ && k < seeds_.size()) {
    Sequence seq = seeds_[k];
    const LifecycleModel* model = seq.model;
    seq.directives = {};
    seq.model = model;
    return {std::move(seq), std::nullopt};
  }
  return {generateSequence(gen_, seqSeed), std::nullopt};
}

uint32_t SequenceSource::mutantsAfter(uint64_t seqSeed) const {
  if (!guided_) return 0;
  std::lock_guard lock(mutex_);
  if (recent_ == 0) return 0;
  const auto stale = static_cast<uint64_t>(std::popcount(stale_));
  // Drawn from the seed, so that one worker's campaign is the same run after run.
  return splitmix64(seqSeed ^ kMutateSalt) % recent_ < stale ? 1 : 0;
}

std::optional<SequenceSource::Drawn> SequenceSource::mutant(uint64_t seed) const {
  if (!guided_) return std::nullopt;
  auto m = queue_->mutant(gen_, seed);
  if (!m) return std::nullopt;
  return Drawn{std::move(m->first), m->second};
}

void SequenceSource::observe(const Drawn& drawn, const TrialResult& result) {
  if (result.harnessError) return;
  const std::size_t added = queue_->offer(drawn.seq, result, drawn.parent);
  if (drawn.parent) return;
  std::lock_guard lock(mutex_);
  const uint64_t mask = (uint64_t{1} << kRecentFresh) - 1;
  stale_ = ((stale_ << 1U) | (added == 0 ? 1U : 0U)) & mask;
  recent_ = std::min(recent_ + 1, kRecentFresh);
}

}  // namespace gpufuzz
