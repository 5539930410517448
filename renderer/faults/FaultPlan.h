// FaultPlan.h: fault plans (docs/fault-plans.md): the rules, the parser of the plan
// language, and the lookup of built-in plans by name.
//
// A plan is data: one rule a line, tried in file order at every device call; the first rule whose
// point matches and whose conditions all hold applies its effect, every time it matches. Parsing
// either yields a whole plan or throws InputError at the FILE:LINE:COLUMN of the offending token
// (columns count bytes from 1), so a plan never half-applies.
//
// Beyond the grammar, the parser rejects effect/point pairs that cannot mean anything: `leak`
// only at buf_free or ctx_destroy (the only calls that return memory), `corrupt` only at launch,
// copy_to_device or copy_to_host (the only calls that produce bytes). A plan that asked for
// either elsewhere would silently test nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "renderer/device/CallPoint.h"
#include "renderer/device/LifecycleCounters.h"

namespace gpufuzz {

enum class Effect : uint8_t { Hang, Spin, Crash, Error, Corrupt, Leak, Delay };

/// The plan-language name; "delay" for Delay, whose duration is written "delay=MS".
std::string_view effectName(Effect effect);

/// Whether `effect` can mean anything at `point` (see the extension above).
bool effectAppliesAt(Effect effect, CallPoint point);

/// The longest delay a plan may ask for: an hour is already far past any deadline the harness
/// sets, and a bound keeps a typo from reading as "forever".
inline constexpr uint64_t kMaxDelayMs = 3'600'000;

enum class Comparison : uint8_t { Ge, Le, Eq, Ne, Gt, Lt };

/// ">=", "<=", "==", "!=", ">", "<".
std::string_view comparisonSymbol(Comparison cmp);
std::optional<Comparison> parseComparison(std::string_view symbol);

/// `counter cmp value`. `first_in_ctx` is stored as its definition, `ctx_calls == 0`.
struct Condition {
  Counter counter{};
  Comparison cmp{};
  uint64_t value = 0;

  bool holds(const CounterSnapshot& counters) const;
  bool operator==(const Condition&) const = default;
};

struct FaultRule {
  Effect effect{};
  /// Milliseconds to wait; set only for Effect::Delay.
  uint64_t delayMs = 0;
  CallPoint point{};
  /// All must hold (ANDed); none means the rule matches every call at `point`.
  std::vector<Condition> conditions;
  /// 1-based line in the plan file.
  int line = 0;
  /// The rule as written on its line, without comment or surrounding blanks.
  std::string text;

  bool matches(CallPoint at, const CounterSnapshot& counters) const;
};

struct FaultPlan {
  /// How findings cite the plan: the built-in name, or the path as given.
  std::string name;
  /// The file the rules were read from (what InputError places point into).
  std::string file;
  std::vector<FaultRule> rules;

  /// The first rule that matches the call, in file order, or nullptr.
  const FaultRule* firstMatch(CallPoint at, const CounterSnapshot& counters) const;
  /// "strict-lifetimes:1: error at buf_free when refs >= 1": where a rule comes from and what
  /// it says, for errors and findings.
  std::string cite(const FaultRule& rule) const;
};

/// Parses plan text. `file` names it in errors and becomes the plan's name and file.
/// Throws InputError at the offending token's FILE:LINE:COLUMN.
FaultPlan parseFaultPlan(std::string_view text, const std::string& file);

/// Reads and parses one plan file; the plan's name is the path as given.
FaultPlan loadFaultPlanFile(const std::string& path);

/// The names of the plans that ship with the project, as `--faults` accepts them.
std::span<const std::string_view> builtinPlanNames();

/// A built-in name or a path. A built-in NAME is read from NAME.plan in the first of these
/// directories that has it: $GPUFUZZ_PLAN_DIR, `plans` next to the running executable, the
/// source tree's renderer/faults/plans. A process reads it once for each $GPUFUZZ_PLAN_DIR, then
/// keeps it. Anything else is read as a path at every call. Throws InputError for a name that
/// is neither (listing the built-ins) and for a malformed plan.
FaultPlan loadFaultPlan(std::string_view nameOrPath);

/// Reads every built-in plan that can be read, for a process that forks children which load
/// them: a built-in plan is read once per process (loadFaultPlan keeps it).
void warmBuiltinPlans();

}  // namespace gpufuzz
