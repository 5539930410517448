// ForkServerProtocol.h: the wire between the harness and a fork server (ForkServer.h), and the
// server's loop, which runs in the runner (it must not pull the harness's supervision code in).
//
// Protocol (SOCK_SEQPACKET, one message each):
//   harness -> server  "run" NUL env-count NUL NAME=VALUE NUL ... ARG NUL ...  + fds: output[,
//   events] server -> harness  "pid N"            (or "error MESSAGE": nothing was started) server
//   -> harness  "exit STATUS"      when the child has exited (waitpid(2) status), unreaped harness
//   -> server  "reap"             the server reaps it and waits for the next request
// The server never touches the device: only its forks do.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gpufuzz {

/// The argument that turns a runner into a fork server (its socket at fd 3).
inline constexpr const char* kForkServerFlag = "--fork-server";
inline constexpr std::size_t kForkServerMaxMessage = 64 * 1024;
inline constexpr int kForkServerMaxFds = 2;

/// Sends one message (no SIGPIPE); false when the peer is gone.
bool sendMessage(int fd, std::string_view text);
/// Receives one message; empty at end of file, on error or when truncated. Descriptors that
/// came with it are close-on-exec and appended to `fds` (closed when `fds` is null).
std::string receiveMessage(int fd, std::vector<int>* fds = nullptr);
/// Whether `fd` is readable within `timeoutMs` (0: now).
bool readableWithin(int fd, int timeoutMs);

/// The server's side: serves requests on `socketFd` until the harness closes it. `runChild`
/// runs in each fork with the request's arguments and returns its exit status. Returns the
/// server's own exit status. `beforeFork`, when set, runs in the server with each request's
/// arguments just before it forks (to map a runtime's libraries once, for every later child).
int serveForks(int socketFd, const std::function<int(const std::vector<std::string>&)>& runChild,
               const std::function<void(const std::vector<std::string>&)>& beforeFork = {});

}  // namespace gpufuzz
