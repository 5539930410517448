// SupervisedChild.h: what a supervised child becomes before it runs, the same whether it is
// started afresh (ChildProcess, between fork and exec) or forked by a fork server: the target
// protocol's C++ client library (clients/cpp/gpufuzz/target.hpp) holds the one implementation.
#pragma once

#include "gpufuzz/target.hpp"

namespace gpufuzz {

/// The descriptor a supervised child writes its progress events to (--events-fd).
inline constexpr int kChildEventsFd = target::kEventsFd;
/// The environment variables of docs/target.md: the events descriptor of a child, and the socket of
/// a fork server.
using target::kEventsFdVariable;
using target::kForkServerFdVariable;
/// Leads a new process group, is killed (SIGKILL) when `parent` dies, lets `tracer` attach, has
/// the default disposition for every signal but SIGTERM and SIGINT (ignored), an empty mask.
using target::becomeSupervisedChild;
/// Makes `outputFd` stdout and stderr and `eventsFd` (unless -1) kChildEventsFd.
using target::placeOutputAndEvents;

}  // namespace gpufuzz
