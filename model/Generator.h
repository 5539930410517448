// Generator.h: random sequences that satisfy the model's preconditions, as RapidCheck generators,
// weighted toward the lifecycle shapes that teardown bugs need.
//
// How it is weighted (the README repeats this for users):
// - Lengths: half the sequences are short (3..12 operations), the rest spread up to --max-ops.
//   Short sequences find ordering bugs fast and shrink in few executions.
// - Renderer vocabulary: with no renderer alive, `create`; otherwise draw (most likely), destroy,
//   create (up to 4 alive), set_textures, sync and read_back. Destroys often follow draws with
//   nothing in between, so renderers are dropped with work queued, with textures replaced between
//   draws, and with or without a read-back; several renderers are often alive at once, and new
//   ones are made after old ones were dropped (the seed's "next context" shape).
// - Device vocabulary: ctx_create, buf_create, buf_destroy and ctx_destroy, with contexts often
//   destroyed while their buffers live and those buffers freed afterwards.
// - Arguments: mostly the defaults and small values (64 x 64, a few triangles, small textures),
//   sometimes large ones, so a sequence runs in microseconds on sim.
#pragma once

#include <cstdint>

#include <rapidcheck.h>

#include "model/Sequence.h"

namespace gpufuzz {

enum class Vocabulary : uint8_t { Renderer, Device, All };

struct GeneratorConfig {
  Vocabulary vocabulary = Vocabulary::Renderer;
  uint32_t maxOps = 40;
};

/// A generator of valid sequences (operations only, no directives).
rc::Gen<Sequence> genSequence(const GeneratorConfig& config);

/// The sequence that `seed` stands for: the same seed and config give the same sequence.
/// Thread-safe.
Sequence generateSequence(const GeneratorConfig& config, uint64_t seed);

}  // namespace gpufuzz
