// RunOutcome.h: how one execution of a sequence ended: its class, where, and the evidence.
#pragma once

#include <optional>
#include <string>

#include "model/Outcome.h"

namespace gpufuzz {

struct RunOutcome {
  OutcomeClass cls = OutcomeClass::Pass;
  /// The operation it happened at (absent for pass and leak).
  std::optional<At> at;
  /// The operation's kind ("create", "buf_free"... ) or "end"; empty when `at` is absent.
  std::string op;
  /// One line for people: the device message, the first differing pixel, the leaked bytes.
  std::string detail;

  bool failed() const { return cls != OutcomeClass::Pass; }
  /// Whether this outcome meets `e`: same class, and same place when `e` names one.
  bool meets(const Expectation& e) const { return cls == e.cls && (!e.at || (at && *at == *e.at)); }
};

/// "hang at 3 (create): no progress for 120 ms, 0.0% CPU"
std::string outcomeText(const RunOutcome& o);

}  // namespace gpufuzz
