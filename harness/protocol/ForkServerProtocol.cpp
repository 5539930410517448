// ForkServerProtocol.cpp: messages between the harness and a fork server, and the server loop.
#include "harness/protocol/ForkServerProtocol.h"

#include "harness/protocol/SupervisedChild.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpufuzz {

bool sendMessage(int fd, std::string_view text) {
  for (;;) {
    if (::send(fd, text.data(), text.size(), MSG_NOSIGNAL) >= 0) return true;
    if (errno != EINTR) return false;
  }
}

/// One message; empty at end of file or on error. Received descriptors are close-on-exec.
std::string receiveMessage(int fd, std::vector<int>* fds) {
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
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
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

bool readableWithin(int fd, int timeoutMs) {
  pollfd p{fd, POLLIN, 0};
  int n;
  do {
    n = ::poll(&p, 1, timeoutMs);
  } while (n < 0 && errno == EINTR);
  return n > 0;
}

namespace {

/// The waitpid(2) status of an exited, still unreaped child.
int statusOf(pid_t pid) {
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0) {
    if (errno != EINTR) return 0;
  }
  if (info.si_code == CLD_EXITED) return (info.si_status & 0xff) << 8;
  return (info.si_status & 0x7f) | (info.si_code == CLD_DUMPED ? 0x80 : 0);
}

void reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

/// In the fork: the process a supervised child must be, then the request's run.
[[noreturn]] void becomeChild(pid_t server, pid_t harness, int socketFd,
                              const std::vector<int>& fds, const std::vector<std::string>& env,
                              const std::vector<std::string>& args,
                              const std::function<int(const std::vector<std::string>&)>& run) {
  ::close(socketFd);
  const int eventsFd = fds.size() > 1 ? fds[1] : -1;
  if (becomeSupervisedChild(server, harness) != 0 || placeOutputAndEvents(fds[0], eventsFd) != 0) {
    ::_exit(127);
  }
  ::close_range(eventsFd >= 0 ? kChildEventsFd + 1 : kChildEventsFd, ~0U, 0);
  for (const std::string& entry : env) {
    const auto equals = entry.find('=');
    ::setenv(entry.substr(0, equals).c_str(), entry.substr(equals + 1).c_str(), 1);
  }
  const int status = run(args);
  std::fflush(nullptr);
  std::exit(status);
}

}  // namespace

int serveForks(int socketFd, const std::function<int(const std::vector<std::string>&)>& run,
               const std::function<void(const std::vector<std::string>&)>& beforeFork) {
  const pid_t server = ::getpid();
  const pid_t harness = ::getppid();
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
    // "run" NUL count NUL env... args...
    std::vector<std::string> fields;
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
    const std::vector<std::string> env(fields.begin() + 2,
                                       fields.begin() + 2 + static_cast<long>(envCount));
    const std::vector<std::string> args(fields.begin() + 2 + static_cast<long>(envCount),
                                        fields.end());
    if (beforeFork) beforeFork(args);
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) becomeChild(server, harness, socketFd, fds, env, args, run);
    closeFds();
    if (pid < 0) {
      if (!sendMessage(socketFd, std::string("error fork: ") + std::strerror(errno))) return 3;
      continue;
    }
    if (!sendMessage(socketFd, "pid " + std::to_string(pid)) ||
        !sendMessage(socketFd, "exit " + std::to_string(statusOf(pid))) ||
        receiveMessage(socketFd) != "reap") {
      ::kill(-pid, SIGKILL);
      reap(pid);
      return 0;
    }
    reap(pid);
  }
}

}  // namespace gpufuzz
