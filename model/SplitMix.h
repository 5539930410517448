// SplitMix64 (Steele, Lea and Flood 2014; Vigna's splitmix64.c): the project's one small,
// deterministic generator. Its figures are the same on every machine and build, which the
// standard library's distributions and std::hash do not promise: generated sequences, seed
// streams and thread schedules are drawn from it.
#pragma once

#include <cstdint>

namespace gpufuzz {

/// The output of one step from `x`: mixes x + the golden gamma.
constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27U)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31U);
}

/// One step of the generator whose state is `state`: its output, the state advanced.
constexpr uint64_t splitmixNext(uint64_t& state) {
  const uint64_t out = splitmix64(state);
  state += 0x9e3779b97f4a7c15ULL;
  return out;
}

}  // namespace gpufuzz
