// Minimize.h: from a failing sequence to a finding: shrink it, renumber its names, give it the
// directives that make `gpufuzz replay FILE` reproduce it with no options, and measure how often
// it reproduces.
#pragma once

#include <functional>
#include <string>

#include "harness/Findings.h"
#include "harness/Shrinker.h"

namespace gpufuzz {

struct MinimizeRequest {
  Sequence failing;
  TrialResult first;  // the run that failed
  uint64_t seed = 0;  // the sequence seed, for the `seed` directive
  std::string found;  // the `found` directive: how it was found
  uint32_t confirmations = 5;
};

Finding minimizeFailure(Shrinker& shrinker, TrialRunner& trials, const MinimizeRequest& request,
                        const std::function<void(const std::string&)>& onStep = {});

/// The `# expect:` a finding's file carries: its class, and its place unless it is a leak.
Expectation expectationOf(const RunOutcome& outcome);

}  // namespace gpufuzz
