// DescribeSupervised.h: one line (and the output) of how a supervised run ended, for the
// messages of failed assertions in the supervision and target tests.
#pragma once

#include <sstream>
#include <string>

#include "harness/supervise/Supervisor.h"

namespace gpufuzz::testing {

inline std::string describeSupervised(const Supervised& s, std::size_t outputLimit = 2000) {
  std::ostringstream out;
  out << outcomeText(s.outcome) << "; exit " << s.exitCode << ", signal " << s.termSignal
      << ", stuck " << s.stuck << ", wall " << s.wall.count() / 1000
      << " ms, harness error: " << s.harnessError.value_or("none")
      << "\noutput: " << s.outputTail.substr(0, outputLimit);
  return out.str();
}

}  // namespace gpufuzz::testing
