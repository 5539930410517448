// ChildCommand.h: what starts a child (an executable, its arguments, environment overrides) and
// the error when it cannot start: the vocabulary ChildProcess and the fork servers share, so
// neither header needs the other.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gpufuzz {

struct ChildCommand {
  std::string executable;
  std::vector<std::string> args;
  /// For a child forked by a fork server (ForkServer.h): how many of `args`, from the first,
  /// start the server; the others are the request's (a target's sequence file, the runner's
  /// whole command line).
  std::size_t serverArgs = 0;
  /// Variables the process needs from its start (LD_PRELOAD): a fork server of the command is
  /// started with them too, and is another server when they differ.
  std::vector<std::pair<std::string, std::string>> startEnvironment = {};
  /// Variables only a fork server of the command is started with, on top of startEnvironment
  /// (a child started afresh has none of them); a server is another server when they differ.
  std::vector<std::pair<std::string, std::string>> serverEnvironment = {};
};

using EnvironmentOverrides = std::vector<std::pair<std::string, std::string>>;

/// The child could not be started (no such executable, no resources); the message says why.
class ChildStartError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gpufuzz
