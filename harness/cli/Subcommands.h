// Subcommands.h: the gpufuzz subcommands (cli.md). Each returns the process exit status.
#pragma once

#include "harness/cli/Session.h"

namespace gpufuzz {

int runReplay(Session& session);
int runShrink(Session& session);
int runFuzz(Session& session);
int runExplain(Session& session);
int runPromote(Session& session);
int runMerge(Session& session);
int runPlot(Session& session);
/// `gpufuzz model check FILE | show NAME`: needs no session (no runner, no device).
int runModel(const CommandLine& cl);

}  // namespace gpufuzz
