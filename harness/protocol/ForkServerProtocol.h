// ForkServerProtocol.h: the wire between the harness and a fork server (ForkServer.h). The
// messages and the server's loop are those of the target protocol's C++ client library
// (clients/cpp/gpufuzz/target.hpp, which documents them), so the project's runner and any target
// built on the library serve forks the same way:
//   server -> harness  "hello 1"          once it is ready, never having touched the device
//   harness -> server  "run" NUL env-count NUL NAME=VALUE NUL ... ARG NUL ...  + fds: output[,
//                      events]
//   server -> harness  "pid N"            (or "error MESSAGE": nothing was started)
//   server -> harness  "exit STATUS"      when the child has exited (waitpid(2) status), unreaped
//   harness -> server  "reap"             the server reaps it and waits for the next request
#pragma once

#include "gpufuzz/target.hpp"

namespace gpufuzz {

/// The argument that turns a runner into a fork server with its socket at fd 3 (the runner also
/// serves when started without arguments and GPUFUZZ_FORK_SERVER_FD set, as any target does).
inline constexpr const char* kForkServerFlag = "--fork-server";
using target::kForkServerHello;
using target::kForkServerMaxFds;
using target::kForkServerMaxMessage;
using target::readableWithin;
using target::receiveMessage;
using target::sendMessage;
using target::serveForks;

}  // namespace gpufuzz
