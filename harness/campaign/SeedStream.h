// SeedStream.h: which sequences a campaign generates. A campaign of seed S generates, at index
// i = 0, 1, 2, ..., the sequence of seed sequenceSeed(S, i). Shard I of N (0 <= I < N, 0-based
// like SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX) takes the indices i = I + k*N, k = 0, 1, ...:
// the residue classes mod N partition the indices, so N shards of one seed are disjoint and
// together generate exactly the unsharded stream, and a shard run twice generates the same
// sequences. A --runs budget R is the whole stream's: a shard runs the indices below R of its
// class. Pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace gpufuzz {

struct Shard {
  uint64_t index = 0;  // I, 0-based
  uint64_t count = 1;  // N
  bool operator==(const Shard&) const = default;
};

/// "I/N" with 0 <= I < N; InputError naming --shard otherwise.
Shard parseShard(const std::string& text);
/// "I/N".
std::string shardText(const Shard& shard);

/// The seed of the sequence at `index` of the stream of `campaignSeed` (splitmix64 of both).
uint64_t sequenceSeed(uint64_t campaignSeed, uint64_t index);

/// The stream index of a shard's k-th sequence: I + k*N.
uint64_t streamIndex(const Shard& shard, uint64_t k);

/// How many of the stream indices below `runs` are the shard's.
uint64_t shardRuns(const Shard& shard, uint64_t runs);

}  // namespace gpufuzz
