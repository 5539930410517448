// Claims.cpp: the claims on causes and the failures deferred to their verdicts.
#include "harness/campaign/Claims.h"

#include <numeric>

namespace gpufuzz {

uint64_t total(const ClassCounts& counts) {
  return std::accumulate(counts.begin(), counts.end(), uint64_t{0});
}

bool Claims::claimOrDefer(const std::string& cause, Owner owner, OutcomeClass cls) {
  const auto [it, claimed] = examining_.try_emplace(cause, owner);
  if (claimed || it->second == owner) return true;
  ++deferred_[cause][static_cast<std::size_t>(cls)];
  return false;
}

std::vector<std::string> Claims::heldBy(Owner owner) const {
  std::vector<std::string> causes;
  for (const auto& [cause, holder] : examining_) {
    if (holder == owner) causes.push_back(cause);
  }
  return causes;
}

std::vector<std::string> Claims::handOver(Owner from, Owner to) {
  std::vector<std::string> causes;
  for (auto& [cause, holder] : examining_) {
    if (holder != from) continue;
    holder = to;
    causes.push_back(cause);
  }
  return causes;
}

std::vector<DeferredHits> Claims::end(const std::function<bool(const std::string&, Owner)>& ends,
                                      const KnownAs& knownAs) {
  std::vector<DeferredHits> hits;
  for (auto it = examining_.begin(); it != examining_.end();) {
    if (!ends(it->first, it->second)) {
      ++it;
      continue;
    }
    if (std::string as = knownAs(it->first); !as.empty()) {
      if (const uint64_t n = total(take(it->first)); n > 0) hits.push_back({std::move(as), n});
    }
    it = examining_.erase(it);
  }
  return hits;
}

ClassCounts Claims::take(const std::string& cause) {
  const auto d = deferred_.find(cause);
  if (d == deferred_.end()) return {};
  const ClassCounts counts = d->second;
  deferred_.erase(d);
  return counts;
}

LeftDeferred Claims::takeLeft(const KnownAs& knownAs) {
  LeftDeferred left;
  for (const auto& [cause, counts] : deferred_) {
    if (std::string as = knownAs(cause); !as.empty()) {
      left.hits.push_back({std::move(as), total(counts)});
      continue;
    }
    for (std::size_t c = 0; c < counts.size(); ++c)
      left.unexamined[c] += counts[c];
  }
  deferred_.clear();
  return left;
}

uint64_t Claims::waiting() const {
  uint64_t n = 0;
  for (const auto& [cause, counts] : deferred_)
    n += total(counts);
  return n;
}

}  // namespace gpufuzz
