// NormalizedModel.h: a lifecycle model as its normalized facts (docs/models.md, "Normalized
// facts"). Each line is one fact of words split at single spaces, so that a target's client
// library in any language reads a model with split() and never parses the `.model` grammar.
//
// Contract:
// - The first line is kModelFactsHeader; the version in it changes only when a fact changes
//   meaning, so a reader skips a line whose first word it does not know.
// - Everything a fact names is declared by an earlier line: kinds before slots and owners,
//   an operation before its weight, slots, arguments, failures and effects.
// - The text follows from the parsed model alone: two texts of one model that differ only in
//   layout or comments give facts that differ only in the hash.
#pragma once

#include <string>
#include <string_view>

#include "model/LifecycleModel.h"

namespace gpufuzz {

/// The first line of every facts text: the form's name and its version.
inline constexpr std::string_view kModelFactsHeader = "gpufuzz-model-facts 1";

/// The normalized facts of `model`, every line ending in a newline.
std::string normalizedModel(const LifecycleModel& model);

/// Where a model file's facts are kept: its path with `.model` replaced by `.facts`, or with
/// `.facts` added when it does not end in `.model`.
std::string modelFactsPath(std::string_view modelPath);

}  // namespace gpufuzz
