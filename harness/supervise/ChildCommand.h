// ChildCommand.h: what starts a child (an executable, its arguments, environment overrides) and
// the error when it cannot start: the vocabulary ChildProcess and the fork servers share, so
// neither header needs the other.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gpufuzz {

struct ChildCommand {
  std::string executable;
  std::vector<std::string> args;
};

using EnvironmentOverrides = std::vector<std::pair<std::string, std::string>>;

/// The child could not be started (no such executable, no resources); the message says why.
class ChildStartError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gpufuzz
