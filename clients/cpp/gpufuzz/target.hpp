// gpufuzz/target.hpp: the C++ client library of the target protocol (target.md), header-only,
// standard library and POSIX only. A program that includes it, implements gpufuzz::target::Target
// for its own renderer or runtime wrapper, and calls gpufuzz::target::main() from its main() can
// be fuzzed with `gpufuzz fuzz --target "PROGRAM ARGS..."`:
//
//   struct MyTarget : gpufuzz::target::Target {
//     void run(const gpufuzz::target::Operation& op) override {
//       if (op.op == "create") { ...; return; }
//       throw gpufuzz::target::Unsupported();
//     }
//   };
//   int main(int argc, char** argv) {
//     return gpufuzz::target::main(argc, argv, "my-renderer 1.0",
//                                  [] { return std::make_unique<MyTarget>(); });
//   }
//
// What main() does: `PROGRAM FILE` reads FILE (a normalized sequence: directives, then one
// operation a line), calls Target::start(), Target::run() for each operation and
// Target::release() for what is still alive at the end (renderers in creation order, then bare
// buffers, then bare contexts), then Target::leaks(); it writes the events to GPUFUZZ_EVENTS_FD as
// it goes, and turns a Failure (or any other exception, as `error`) into the outcome line.
// `PROGRAM --version` prints the version string. With GPUFUZZ_FORK_SERVER_FD set and no FILE,
// the program is a fork server: it says hello, and runs each sequence the harness asks for in a
// fork of itself, so start-up (static initialisation, a JIT, a runtime's libraries) is paid once.
// The device must not be touched before the fork: do that in Target::start(), which runs in the
// fork.
//
// The fork-server messages (one per SOCK_SEQPACKET packet):
//   server -> harness   "hello 1"                 once start-up is done
//   harness -> server   "run" NUL COUNT NUL NAME=VALUE NUL (COUNT times) ARG NUL ...
//                       with descriptors [output, events] (SCM_RIGHTS)
//   server -> harness   "pid P"                   the fork that runs it (or "error MESSAGE")
//   server -> harness   "exit S"                  once it exited, unreaped: waitpid(2) status S
//   harness -> server   "reap"                    the server reaps it and waits for the next
// End of file on the socket: the server kills its running child, if any, and exits 0. In the
// fork: its own process group, SIGKILL when the server dies, every signal at its default but
// SIGTERM and SIGINT (ignored: the harness ends its children itself), an empty signal mask,
// stdout and stderr on the output descriptor, events on 3, no other descriptor, and the
// request's NAME=VALUE pairs in its environment.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpufuzz::target {

// --- the protocol's constants ------------------------------------------------------------------

inline constexpr const char* kEventsFdVariable = "GPUFUZZ_EVENTS_FD";
inline constexpr const char* kForkServerFdVariable = "GPUFUZZ_FORK_SERVER_FD";
/// The descriptor a child's events go to, and the fork server's socket.
inline constexpr int kEventsFd = 3;
inline constexpr const char* kForkServerHello = "hello 1";
inline constexpr std::size_t kForkServerMaxMessage = 64 * 1024;
inline constexpr int kForkServerMaxFds = 2;

// --- events ------------------------------------------------------------------------------------

/// Writes the events of target.md, one write(2) a line, unbuffered. A negative fd writes
/// nothing (a target run by hand).
class Events {
 public:
  explicit Events(int fd) : fd_(fd) {}
  /// The descriptor GPUFUZZ_EVENTS_FD names, or -1.
  static Events fromEnvironment() {
    const char* text = std::getenv(kEventsFdVariable);
    if (!text || !*text) return Events(-1);
    char* end = nullptr;
    const long fd = std::strtol(text, &end, 10);
    return Events(*end == '\0' && fd >= 0 && fd < (1 << 20) ? static_cast<int>(fd) : -1);
  }

  int fd() const { return fd_; }

  void start(std::size_t operations) const { line("start " + std::to_string(operations)); }
  /// `at`: the 1-based ordinal, or "end".
  void begin(std::string_view at, std::string_view op) const {
    line("begin " + std::string(at) + " " + std::string(op));
  }
  void done(std::string_view at) const { line("done " + std::string(at)); }
  /// `cls`: pass, error, invalid, mismatch or leak; `at`, `op`: "-" when none.
  void outcome(std::string_view cls, std::string_view at, std::string_view op,
               std::string_view detail) const {
    std::string text = "outcome " + std::string(cls) + " " + std::string(at.empty() ? "-" : at) +
                       " " + std::string(op.empty() ? "-" : op) + " ";
    for (const char c : detail)
      text.push_back(c == '\n' || c == '\r' ? ' ' : c);
    line(text);
  }
  /// One line as it is (without its newline).
  void line(std::string text) const {
    if (fd_ < 0) return;
    text.push_back('\n');
    std::size_t off = 0;
    while (off < text.size()) {
      const ssize_t n = ::write(fd_, text.data() + off, text.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the harness is gone; the run itself goes on
      off += static_cast<std::size_t>(n);
    }
  }

 private:
  int fd_;
};

// --- sequences ---------------------------------------------------------------------------------

/// One operation: `OP NAME... [key=value]...`.
struct Operation {
  std::string op;
  std::vector<std::string> names;
  std::vector<std::pair<std::string, std::uint64_t>> args;
  /// The value of `key`, or `otherwise` when the line does not give it.
  std::uint64_t arg(std::string_view key, std::uint64_t otherwise) const {
    for (const auto& [k, v] : args) {
      if (k == key) return v;
    }
    return otherwise;
  }
  const std::string& name(std::size_t i = 0) const {
    if (i >= names.size()) throw std::out_of_range(op + ": no name " + std::to_string(i + 1));
    return names[i];
  }
};

struct Sequence {
  /// `# key: value` lines before the first operation (policy, faults, backend, ...).
  std::vector<std::pair<std::string, std::string>> directives;
  std::vector<Operation> ops;
  std::optional<std::string> directive(std::string_view key) const {
    for (const auto& [k, v] : directives) {
      if (k == key) return v;
    }
    return std::nullopt;
  }
};

/// A sequence file that is not what the harness writes.
class BadSequence : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Parses the normalized form of sequences.md (the harness writes nothing else): blank lines and
/// comments are skipped, `# key: value` before the first operation is a directive, every other
/// line an operation whose key=value arguments are unsigned integers.
inline Sequence parseSequence(std::string_view text, const std::string& file = "sequence") {
  Sequence seq;
  std::size_t begin = 0;
  int lineNo = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find('\n', begin), text.size());
    std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    ++lineNo;
    const auto where = [&] { return file + ":" + std::to_string(lineNo) + ": "; };
    const std::size_t hash = line.find('#');
    if (hash != std::string_view::npos) {
      std::string_view comment = line.substr(hash + 1);
      const std::size_t colon = comment.find(':');
      if (seq.ops.empty() && colon != std::string_view::npos &&
          line.substr(0, hash).find_first_not_of(" \t\r") == std::string_view::npos) {
        std::string_view key = comment.substr(0, colon);
        key.remove_prefix(std::min(key.find_first_not_of(' '), key.size()));
        if (!key.empty() && key.find(' ') == std::string_view::npos) {
          std::string_view value = comment.substr(colon + 1);
          value.remove_prefix(std::min(value.find_first_not_of(' '), value.size()));
          while (!value.empty() && (value.back() == ' ' || value.back() == '\r'))
            value.remove_suffix(1);
          seq.directives.emplace_back(std::string(key), std::string(value));
        }
      }
      line = line.substr(0, hash);
    }
    std::istringstream words{std::string(line)};
    Operation op;
    if (!(words >> op.op)) continue;
    for (std::string word; words >> word;) {
      const std::size_t equals = word.find('=');
      if (equals == std::string::npos) {
        if (!op.args.empty()) throw BadSequence(where() + "a name after an argument: " + word);
        op.names.push_back(word);
        continue;
      }
      const std::string value = word.substr(equals + 1);
      char* rest = nullptr;
      errno = 0;
      const unsigned long long n = std::strtoull(value.c_str(), &rest, 10);
      if (value.empty() || *rest != '\0' || errno != 0 || value[0] == '-') {
        throw BadSequence(where() + "'" + word + "' is not key=unsigned integer");
      }
      op.args.emplace_back(word.substr(0, equals), static_cast<std::uint64_t>(n));
    }
    seq.ops.push_back(std::move(op));
  }
  return seq;
}

inline Sequence loadSequence(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadSequence(path + ": cannot read: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return parseSequence(text.str(), path);
}

// --- what a target implements ------------------------------------------------------------------

/// A failure the target saw itself: `cls` is error, invalid, mismatch or leak.
class Failure : public std::runtime_error {
 public:
  Failure(std::string cls, const std::string& detail)
      : std::runtime_error(detail), cls_(std::move(cls)) {}
  const std::string& cls() const { return cls_; }

 private:
  std::string cls_;
};

/// Thrown by Target::run() for an operation the target does not implement.
class Unsupported : public std::runtime_error {
 public:
  Unsupported() : std::runtime_error("unsupported operation") {}
};

/// What is still alive at the end, in the order it is released.
struct Leftover {
  enum class Kind { Renderer, Buffer, Context } kind;
  std::string name;
};

class Target {
 public:
  virtual ~Target() = default;
  /// In the process that runs the sequence (a fork, under a fork server), before the first
  /// operation: the place to open the device.
  virtual void start(const Sequence&) {}
  /// One operation; throw Failure, Unsupported, or anything else (an `error` with its text).
  virtual void run(const Operation& op) = 0;
  /// Releases one leftover after the last operation (by default: runs `destroy R`,
  /// `buf_destroy B` or `ctx_destroy C`).
  virtual void release(const Leftover& left) {
    static constexpr const char* kOps[] = {"destroy", "buf_destroy", "ctx_destroy"};
    run(Operation{kOps[static_cast<int>(left.kind)], {left.name}, {}});
  }
  /// After everything was released: a description of what leaked, or nothing.
  virtual std::optional<std::string> leaks() { return std::nullopt; }
};

/// What is alive, in creation order, from the operations that create and destroy names.
class LiveNames {
 public:
  void after(const Operation& op) {
    if ((op.op == "create" || op.op == "ctx_create") && !op.names.empty()) {
      add(op.op == "create" ? Leftover::Kind::Renderer : Leftover::Kind::Context, op.names[0]);
    } else if (op.op == "buf_create" && op.names.size() >= 2) {
      add(Leftover::Kind::Buffer, op.names[1]);
    } else if ((op.op == "destroy" || op.op == "buf_destroy" || op.op == "ctx_destroy") &&
               !op.names.empty()) {
      std::erase_if(live_, [&](const Leftover& l) { return l.name == op.names[0]; });
    }
  }
  /// Renderers in creation order, then bare buffers, then bare contexts.
  std::vector<Leftover> leftovers() const {
    std::vector<Leftover> out;
    for (const auto kind :
         {Leftover::Kind::Renderer, Leftover::Kind::Buffer, Leftover::Kind::Context}) {
      for (const Leftover& l : live_) {
        if (l.kind == kind) out.push_back(l);
      }
    }
    return out;
  }

 private:
  void add(Leftover::Kind kind, const std::string& name) { live_.push_back({kind, name}); }
  std::vector<Leftover> live_;
};

/// Runs `seq` on `target`, writing its events; the exit status (0 pass, 1 a failure).
inline int runSequence(const Sequence& seq, Target& target, const Events& events) {
  events.start(seq.ops.size());
  std::string at = "-", op = "-";
  const auto fail = [&](std::string_view cls, std::string_view detail) {
    events.outcome(cls, at, op, detail);
    return 1;
  };
  try {
    // A start that fails fails the first operation (or the release, for an empty sequence).
    at = seq.ops.empty() ? "end" : "1";
    op = seq.ops.empty() ? "end" : seq.ops[0].op;
    target.start(seq);
    LiveNames live;
    for (std::size_t i = 0; i < seq.ops.size(); ++i) {
      at = std::to_string(i + 1);
      op = seq.ops[i].op;
      events.begin(at, op);
      target.run(seq.ops[i]);
      events.done(at);
      live.after(seq.ops[i]);
    }
    at = op = "end";
    events.begin(at, op);
    for (const Leftover& left : live.leftovers())
      target.release(left);
    events.done(at);
    at = op = "-";
    if (const std::optional<std::string> leaked = target.leaks()) return fail("leak", *leaked);
  } catch (const Failure& f) {
    return fail(f.cls(), f.what());
  } catch (const Unsupported& u) {
    return fail("error", u.what());
  } catch (const std::exception& e) {
    return fail("error", e.what());
  } catch (...) {
    return fail("error", "an exception that is not a std::exception");
  }
  events.outcome("pass", "-", "-", "");
  return 0;
}

// --- the fork server ---------------------------------------------------------------------------

/// Sends one message (no SIGPIPE); false when the peer is gone.
inline bool sendMessage(int fd, std::string_view text) {
  for (;;) {
    if (::send(fd, text.data(), text.size(), MSG_NOSIGNAL) >= 0) return true;
    if (errno != EINTR) return false;
  }
}

/// Receives one message; empty at end of file, on error or when truncated. Descriptors that
/// came with it are close-on-exec and appended to `fds` (closed when `fds` is null).
inline std::string receiveMessage(int fd, std::vector<int>* fds = nullptr) {
  std::string buffer(kForkServerMaxMessage, '\0');
  iovec io{buffer.data(), buffer.size()};
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * kForkServerMaxFds)> control{};
  msghdr msg{};
  msg.msg_iov = &io;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  ssize_t n;
  do {
    n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); n >= 0 && c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int received = -1;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (fds) {
        fds->push_back(received);
      } else {
        ::close(received);
      }
    }
  }
  if (n <= 0 || (msg.msg_flags & MSG_TRUNC) != 0) return {};
  buffer.resize(static_cast<std::size_t>(n));
  return buffer;
}

/// Whether `fd` is readable within `timeoutMs` (0: now).
inline bool readableWithin(int fd, int timeoutMs) {
  pollfd p{fd, POLLIN, 0};
  int n;
  do {
    n = ::poll(&p, 1, timeoutMs);
  } while (n < 0 && errno == EINTR);
  return n > 0;
}

/// What a supervised child becomes before it runs, started afresh or forked: leads a new process
/// group, is killed (SIGKILL) when `parent` dies (exits with status 127 at once if it already
/// has), lets `tracer` attach (gdb under Yama ptrace_scope 1), and has every signal at its
/// default but SIGTERM and SIGINT, which it ignores, and an empty mask. Async-signal-safe calls
/// only (it also runs between fork and exec in a multithreaded process). 0, or the errno.
inline int becomeSupervisedChild(pid_t parent, pid_t tracer) {
  if (::setpgid(0, 0) != 0) return errno;
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return errno;
  if (::getppid() != parent) ::_exit(127);  // the parent died before the signal was armed
  ::prctl(PR_SET_PTRACER, static_cast<unsigned long>(tracer), 0UL, 0UL, 0UL);
  // Ignored signals and the mask survive fork and execve; the harness's must not reach the child.
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction byDefault {};
  byDefault.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig)
    ::sigaction(sig, &byDefault, nullptr);
  // A stop meant for the whole job (Slurm signals every process of it on cancel, requeue or time
  // limit, at times a child before the harness) is the harness's to act on: it kills its
  // children itself (SIGKILL) and keeps what they found.
  struct sigaction ignored {};
  ignored.sa_handler = SIG_IGN;
  ::sigaction(SIGTERM, &ignored, nullptr);
  ::sigaction(SIGINT, &ignored, nullptr);
  return 0;
}

/// Makes `outputFd` stdout and stderr and `eventsFd` (unless -1) kEventsFd, whatever numbers
/// they have now (no dup2 overwrites another's source). 0, or the errno that failed.
inline int placeOutputAndEvents(int outputFd, int eventsFd) {
  const int output = ::fcntl(outputFd, F_DUPFD_CLOEXEC, 10);
  const int events = eventsFd >= 0 ? ::fcntl(eventsFd, F_DUPFD_CLOEXEC, 10) : -1;
  if (output < 0 || (eventsFd >= 0 && events < 0)) return errno;
  if (::dup2(output, STDOUT_FILENO) < 0 || ::dup2(output, STDERR_FILENO) < 0) return errno;
  if (events >= 0 && ::dup2(events, kEventsFd) < 0) return errno;
  return 0;
}

namespace detail {

/// The waitpid(2) status of an exited, still unreaped child.
inline int statusOf(pid_t pid) {
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0) {
    if (errno != EINTR) return 0;
  }
  if (info.si_code == CLD_EXITED) return (info.si_status & 0xff) << 8;
  return (info.si_status & 0x7f) | (info.si_code == CLD_DUMPED ? 0x80 : 0);
}

inline void reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace detail

/// Serves requests on `socketFd` until the harness closes it: says hello, then runs each
/// request's arguments in a fork, through `runChild` (whose return is the fork's exit status).
/// `beforeFork`, when set, runs in the server with each request's arguments just before it
/// forks (to map a runtime's libraries once, for every later child). The server's exit status.
inline int serveForks(int socketFd,
                      const std::function<int(const std::vector<std::string>&)>& runChild,
                      const std::function<void(const std::vector<std::string>&)>& beforeFork = {}) {
  const pid_t server = ::getpid();
  const pid_t harness = ::getppid();
  if (!sendMessage(socketFd, kForkServerHello)) return 0;
  for (;;) {
    std::vector<int> fds;
    const std::string request = receiveMessage(socketFd, &fds);
    const auto closeFds = [&fds] {
      for (const int fd : fds)
        ::close(fd);
    };
    if (request.empty()) {
      closeFds();
      return 0;  // the harness is done with this server
    }
    std::vector<std::string> fields;  // "run" NUL count NUL env... args...
    std::size_t begin = 0;
    for (std::size_t i = 0; i < request.size(); ++i) {
      if (request[i] != '\0') continue;
      fields.emplace_back(request, begin, i - begin);
      begin = i + 1;
    }
    char* end = nullptr;
    const unsigned long envCount =
        fields.size() >= 2 ? std::strtoul(fields[1].c_str(), &end, 10) : 0;
    if (fields.size() < 2 || fields[0] != "run" || *end != '\0' || envCount > fields.size() - 2 ||
        fds.empty() || fds.size() > kForkServerMaxFds || begin != request.size()) {
      closeFds();
      if (!sendMessage(socketFd, "error malformed fork server request")) return 3;
      continue;
    }
    const auto envEnd = fields.begin() + 2 + static_cast<long>(envCount);
    const std::vector<std::string> env(fields.begin() + 2, envEnd);
    const std::vector<std::string> args(envEnd, fields.end());
    if (beforeFork) beforeFork(args);
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(socketFd);
      const int eventsFd = fds.size() > 1 ? fds[1] : -1;
      if (becomeSupervisedChild(server, harness) != 0 ||
          placeOutputAndEvents(fds[0], eventsFd) != 0) {
        ::_exit(127);
      }
      ::close_range(eventsFd >= 0 ? kEventsFd + 1 : kEventsFd, ~0U, 0);
      for (const std::string& entry : env) {
        const auto equals = entry.find('=');
        ::setenv(entry.substr(0, equals).c_str(),
                 equals == std::string::npos ? "" : entry.substr(equals + 1).c_str(), 1);
      }
      const int status = runChild(args);
      std::fflush(nullptr);
      ::_exit(status);
    }
    closeFds();
    if (pid < 0) {
      if (!sendMessage(socketFd, std::string("error fork: ") + std::strerror(errno))) return 3;
      continue;
    }
    if (!sendMessage(socketFd, "pid " + std::to_string(pid)) ||
        !sendMessage(socketFd, "exit " + std::to_string(detail::statusOf(pid))) ||
        receiveMessage(socketFd) != "reap") {
      ::kill(-pid, SIGKILL);
      detail::reap(pid);
      return 0;
    }
    detail::reap(pid);
  }
}

/// The socket GPUFUZZ_FORK_SERVER_FD names, or -1 when the program is not asked to serve.
inline int forkServerSocket() {
  const char* text = std::getenv(kForkServerFdVariable);
  if (!text || !*text) return -1;
  char* end = nullptr;
  const long fd = std::strtol(text, &end, 10);
  return *end == '\0' && fd >= 0 && fd < (1 << 20) ? static_cast<int>(fd) : -1;
}

/// A target's whole main(): `PROGRAM FILE`, `PROGRAM --version`, or a fork server (no FILE,
/// GPUFUZZ_FORK_SERVER_FD set). `make` is called once per sequence, in the process that runs it.
/// Exit status: 0 pass, 1 a failure, 2 bad usage or an unreadable sequence.
inline int main(int argc, char** argv, std::string_view version,
                const std::function<std::unique_ptr<Target>()>& make) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const auto runFile = [&](const std::vector<std::string>& a) -> int {
    if (a.size() != 1) {
      std::fprintf(stderr, "usage: %s FILE | --version\n", argc > 0 ? argv[0] : "target");
      return 2;
    }
    Sequence seq;
    try {
      seq = loadSequence(a[0]);
    } catch (const BadSequence& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 2;
    }
    // The fork server's environment entries were set after the server started: read it now.
    const Events events = Events::fromEnvironment();
    std::unique_ptr<Target> target;
    try {
      target = make();
    } catch (const std::exception& e) {
      events.start(seq.ops.size());
      events.outcome("error", "-", "-", std::string("the target could not be made: ") + e.what());
      return 1;
    }
    return runSequence(seq, *target, events);
  };
  if (args.size() == 1 && args[0] == "--version") {
    std::printf("%.*s\n", static_cast<int>(version.size()), version.data());
    return 0;
  }
  if (args.empty()) {
    if (const int socket = forkServerSocket(); socket >= 0) return serveForks(socket, runFile);
  }
  return runFile(args);
}

}  // namespace gpufuzz::target
