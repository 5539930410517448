// SeedSchedule.cpp: the shard counters handed to workers, and the sequences left unfinished.
#include "harness/campaign/SeedSchedule.h"

#include <algorithm>

#include "harness/campaign/SearchQueue.h"

namespace gpufuzz {

SeedSchedule::SeedSchedule(uint64_t seed, Shard shard, std::optional<uint64_t> runs)
    : seed_(seed), shard_(shard), runs_(runs) {}

void SeedSchedule::startAt(uint64_t k, const std::vector<uint64_t>& unfinished) {
  std::lock_guard lock(mutex_);
  next_ = k;
  startedUpTo_ = k;
  redo_.insert(unfinished.begin(), unfinished.end());
}

void SeedSchedule::keepFrontier(uint64_t k, const std::vector<uint64_t>& unfinished) {
  std::lock_guard lock(mutex_);
  frontier_ = k;
  unfinished_.insert(unfinished.begin(), unfinished.end());
}

std::optional<uint64_t> SeedSchedule::take() {
  std::lock_guard lock(mutex_);
  uint64_t k = 0;
  if (!redo_.empty()) {
    k = *redo_.begin();
    redo_.erase(redo_.begin());
  } else {
    k = next_++;
    if (runs_ && streamIndex(shard_, k) >= *runs_) return std::nullopt;
    startedUpTo_ = std::max(startedUpTo_, k + 1);
  }
  unfinished_.insert(k);
  return k;
}

void SeedSchedule::done(uint64_t k) {
  std::lock_guard lock(mutex_);
  unfinished_.erase(k);
}

void SeedSchedule::mutantFailed(uint64_t seqSeed, uint64_t parent) {
  std::lock_guard lock(mutex_);
  mutantOf_.emplace(seqSeed, parent);
}

std::string SeedSchedule::foundText(uint64_t seqSeed, std::size_t ranBefore) const {
  std::optional<uint64_t> parent;
  {
    std::lock_guard lock(mutex_);
    if (const auto it = mutantOf_.find(seqSeed); it != mutantOf_.end()) parent = it->second;
  }
  // A mutant's seed does not generate it: what it was made from says where it came from.
  if (parent) {
    return "gpufuzz fuzz --seed " + std::to_string(seed_) + " --search guided (a mutant of " +
           "queue/" + SearchQueue::fileName(*parent) + ", drawn from seed " +
           std::to_string(seqSeed) + ")";
  }
  return "gpufuzz fuzz --seed " + std::to_string(seed_) + " (sequence seed " +
         std::to_string(seqSeed) +
         (ranBefore ? ", after the " + std::to_string(ranBefore) +
                          " sequence(s) its persistent process ran before it"
                    : std::string()) +
         ")";
}

uint64_t SeedSchedule::nextSequence() const {
  std::lock_guard lock(mutex_);
  return std::max(frontier_, startedUpTo_);
}

std::vector<uint64_t> SeedSchedule::unfinished() const {
  std::lock_guard lock(mutex_);
  return {unfinished_.begin(), unfinished_.end()};
}

}  // namespace gpufuzz
