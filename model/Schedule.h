// Schedule.h: how the threads of a threaded run interleave at runtime calls (docs/sequences.md,
// Threads on real runtimes): `--schedule`, the `schedule` directive, and the schedule of one try.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "model/SplitMix.h"

namespace gpufuzz {

enum class ScheduleMode : uint8_t { Os, Pct, Collide, Mix };

inline constexpr std::array<std::string_view, 4> kScheduleNames = {"os", "pct", "collide", "mix"};

constexpr std::string_view scheduleName(ScheduleMode mode) {
  return kScheduleNames[static_cast<std::size_t>(mode)];
}

constexpr std::optional<ScheduleMode> scheduleModeOf(std::string_view name) {
  for (std::size_t i = 0; i < kScheduleNames.size(); ++i) {
    if (kScheduleNames[i] == name) return static_cast<ScheduleMode>(i);
  }
  return std::nullopt;
}

/// The schedule try `attempt` of a sequence with seed `seed` runs under: `mode` itself, or for
/// `mix` collide, pct and os in turn. The turn starts where the seed says: a campaign runs most
/// sequences once, and each of the three must still get its share of them.
constexpr ScheduleMode scheduleOfTry(ScheduleMode mode, std::optional<uint64_t> seed,
                                     uint64_t attempt) {
  if (mode != ScheduleMode::Mix) return mode;
  constexpr std::array<ScheduleMode, 3> kTurn = {ScheduleMode::Collide, ScheduleMode::Pct,
                                                 ScheduleMode::Os};
  const uint64_t start = splitmix64(seed.value_or(0) ^ 0x5c4ed011ULL);
  return kTurn[(start + attempt) % kTurn.size()];
}

}  // namespace gpufuzz
