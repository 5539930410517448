// RunOutcome.h: how one execution of a sequence ended: its class, where, and the evidence.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "model/Outcome.h"

namespace gpufuzz {

/// The operation name of a run's end: the release of what its sequence left.
inline constexpr std::string_view kEndOperation = "end";

struct RunOutcome {
  OutcomeClass cls = OutcomeClass::Pass;
  /// The operation it happened at (absent for pass and leak).
  std::optional<At> at;
  /// The operation's kind ("create", "buf_free"... ) or "end"; empty when `at` is absent.
  std::string op;
  /// One line for people: the device message, the first differing pixel, the leaked bytes.
  std::string detail;
  /// The fault-plan rule that planted this failure, as the plan cites it ("two-hangs.plan:2:
  /// hang at ctx_destroy when live_buffers >= 4"), when the runner said one fired where it
  /// happened (harness/protocol/Events.h: `fault`); empty for a failure of the system itself.
  std::string fault;
  /// The target cannot run this sequence (docs/target.md, Vocabulary): an operation it does not
  /// implement, or threads. Never a finding; `cls` is Error and `detail` says what it lacks.
  bool unsupported = false;

  bool failed() const { return cls != OutcomeClass::Pass; }
  /// Whether this outcome meets `e`: same class, and same place when `e` names one.
  bool meets(const Expectation& e) const { return cls == e.cls && (!e.at || (at && *at == *e.at)); }
};

/// "hang at 3 (create): no progress for 120 ms, 0.0% CPU"
std::string outcomeText(const RunOutcome& o);

/// What failures of one kind share, for counting hits and shortening deadlines: the class and,
/// for a planted failure, its rule ("hang/fault two-hangs.plan:2: ..."), else the kind of
/// operation it happened at ("hang/destroy"). A rule acts on a device call, which several kinds
/// of operation make (a `destroy` and the release at the end both destroy contexts): those are
/// entry points into one planted bug.
std::string failureKind(const RunOutcome& o);

}  // namespace gpufuzz
