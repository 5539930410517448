// SeedStream.cpp: per-index sequence seeds and the shards of a stream.
#include "harness/campaign/SeedStream.h"

#include <charconv>

#include "base/InputError.h"
#include "model/SplitMix.h"

namespace gpufuzz {

namespace {

bool readNumber(std::string_view text, uint64_t& n) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

}  // namespace

Shard parseShard(const std::string& text) {
  const auto slash = text.find('/');
  Shard s;
  if (slash == std::string::npos || !readNumber(std::string_view(text).substr(0, slash), s.index) ||
      !readNumber(std::string_view(text).substr(slash + 1), s.count)) {
    throw InputError("--shard: '" + text + "' is not I/N (shard I of N, 0-based: 0/4 .. 3/4)");
  }
  if (s.count == 0 || s.index >= s.count) {
    throw InputError("--shard: '" + text + "': I must be in 0.." +
                     (s.count == 0 ? std::string("N-1 with N >= 1")
                                   : std::to_string(s.count - 1) + " (shards are 0-based)"));
  }
  return s;
}

std::string shardText(const Shard& shard) {
  return std::to_string(shard.index) + "/" + std::to_string(shard.count);
}

uint64_t sequenceSeed(uint64_t campaignSeed, uint64_t index) {
  return splitmix64(campaignSeed ^ splitmix64(index));
}

uint64_t streamIndex(const Shard& shard, uint64_t k) {
  return shard.index + k * shard.count;
}

uint64_t shardRuns(const Shard& shard, uint64_t runs) {
  return runs > shard.index ? (runs - shard.index + shard.count - 1) / shard.count : 0;
}

}  // namespace gpufuzz
