// FailingFile.h: the start every command on one failing sequence file shares (shrink, explain):
// the file's sequence under its run configuration, run once; a file whose sequence passes is
// refused as bad input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "harness/cli/Session.h"
#include "harness/search/Trial.h"
#include "model/Sequence.h"

namespace gpufuzz {

struct FailingFile {
  std::string file;
  Sequence seq;
  /// --confirmations.
  uint32_t confirmations = 0;
  Session::FileRun run;
  /// The first run; failed() whenever exitStatus is unset.
  TrialResult first;
  /// Set when the harness itself failed on the first run (the message is printed): what the
  /// command returns, 130 after a stop, else 3.
  std::optional<int> exitStatus;
};

/// Loads the command line's first file and runs its sequence once as `mode`. Throws InputError
/// "FILE: the sequence passes on BACKEND (policy P, faults F): nothing to VERB" when it does not
/// fail.
FailingFile runFailingFile(Session& session, TrialMode mode, const char* verb);

}  // namespace gpufuzz
