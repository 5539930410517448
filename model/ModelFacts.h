// ModelFacts.h: what each step of a sequence does in its model's terms: the names it
// introduces, uses and ends, the flags those names hold at that moment, the flags it sets or
// clears, and the owned names still alive when an owner ends. Causes count these roles, so two
// failures of one bug share them; explanations print their text.
#pragma once

#include <string>
#include <vector>

#include "model/Sequence.h"

namespace gpufuzz {

struct ModelStep {
  /// The role, in the model's words and without names: "ends-pool-owning-buf",
  /// "uses-stream-pending", "introduces-buf", joined by '+' when a step plays several.
  std::string role;
  /// For people: "ends pool p0 while 1 buf of it is alive (b0)".
  std::string text;
};

/// One ModelStep per operation of `seq`, which must be valid.
std::vector<ModelStep> modelFacts(const Sequence& seq);

}  // namespace gpufuzz
