// ForkServer.h: children forked from a runner that started once, instead of a fresh runner
// started (exec, dynamic linking, initialisation) for every sequence.
//
// A fork server is a runner, or a target of docs/target.md, started with GPUFUZZ_FORK_SERVER_FD=3
// and a socket at fd 3; it says hello once it is ready. It never touches the device before it forks
// (a process that initialised CUDA cannot use it in a forked child): it waits for a request, forks,
// and the fork runs the request's runner arguments as a fresh runner would, with its stdout/stderr
// and events going to the descriptors that came with the request (protocol: ForkServerProtocol.h).
// The child is reaped only after the harness has let go of its process group (ChildProcess's
// registration), so a group id the harness may still signal is never reused in between.
//
// The forked child leads its own process group, dies with SIGKILL when its server dies (and the
// server when the harness thread that started it dies), has the default signal dispositions and
// mask, and holds no descriptor but 0 (/dev/null), 1 and 2 (output) and 3 (events).
//
// Thread safety: ForkServers::start() may be called from any thread; a ForkedChild belongs to
// the thread that uses it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/protocol/ForkServerProtocol.h"
#include "harness/supervise/ChildCommand.h"

namespace gpufuzz {

/// A child forked by a server, from the harness's side.
class ForkedChild {
 public:
  struct Lease;
  ForkedChild(pid_t pid, std::unique_ptr<Lease> lease);
  ~ForkedChild();
  ForkedChild(const ForkedChild&) = delete;
  ForkedChild& operator=(const ForkedChild&) = delete;

  pid_t pid() const { return pid_; }
  /// Readable once the server has reported the child's exit (or the server is gone).
  int exitNoticeFd() const;
  /// Whether the exit notice is there, without blocking.
  bool exitNoticed() const;
  /// Blocks until the exit notice: the child's waitpid(2) status; nullopt when the server died
  /// (its child then died with it).
  std::optional<int> exitStatus();
  /// Lets the server reap the child and serve again. Call after exitStatus(), once the child's
  /// process group is no longer signalled.
  void release();
  /// Gives up on the child (it outlived SIGKILL): the server is not reused.
  void abandon();

 private:
  pid_t pid_;
  std::unique_ptr<Lease> lease_;
  std::optional<std::optional<int>> status_;
};

class ForkServers {
 public:
  /// Runs `command` as a fork of an idle server for it (its executable and its first
  /// `serverArgs` arguments, started with GPUFUZZ_FORK_SERVER_FD=3), starting one if none is
  /// idle; the other arguments make the request. `outputFd` becomes the child's stdout and
  /// stderr, `eventsFd` (or -1) its fd 3. Null when the command does not serve forks (it said
  /// no hello: it is not tried again, and the caller starts it afresh). Throws ChildStartError
  /// when a server failed to fork the child.
  static std::unique_ptr<ForkedChild> start(const ChildCommand& command,
                                            const EnvironmentOverrides& environment, int outputFd,
                                            int eventsFd);
  /// Stops every idle server (they are started again when needed).
  static void stopIdle();
  /// Whether `command` was tried as a fork server and said no hello (start() gives null for it).
  static bool refuses(const ChildCommand& command);
};

}  // namespace gpufuzz
