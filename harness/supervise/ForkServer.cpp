// ForkServer.cpp: the pool of fork servers, from the harness's side.
#include "harness/supervise/ForkServer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <poll.h>

#include "harness/supervise/ChildProcess.h"

namespace gpufuzz {

namespace {

// A server that does not answer a request within this long is discarded.
constexpr int kReplyTimeoutMs = 10'000;
// How long a server may take to start (an interpreter's imports, a JIT) before its hello.
constexpr int kHelloTimeoutMs = 30'000;

/// A server's identity: its executable and the arguments it is started with.
std::string serverKey(const ChildCommand& command) {
  std::string key = command.executable;
  for (std::size_t i = 0; i < command.serverArgs && i < command.args.size(); ++i) {
    key.push_back('\0');
    key += command.args[i];
  }
  for (const auto* environment : {&command.startEnvironment, &command.serverEnvironment}) {
    for (const auto& [name, value] : *environment) {
      key.push_back('\0');
      key += name + "=" + value;
    }
  }
  return key;
}

struct Server {
  std::unique_ptr<ChildProcess> process;
  int socket = -1;
  std::string refusal;  // why the command is not a fork server; empty when it is one
  Server() = default;
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server() {
    if (socket >= 0) ::close(socket);
    // ChildProcess's destructor kills the server's group and reaps it.
  }
};

/// Idle servers by executable, and the one thread that starts servers: a child's parent-death
/// signal fires when the thread that forked it ends, so servers are forked by a thread that
/// lives as long as the process.
class Pool {
 public:
  static Pool& instance() {
    static Pool* pool = new Pool;  // never destroyed: servers die with the process
    return *pool;
  }

  /// An idle server of `command`, or a new one; null when the command does not serve forks
  /// (it said no hello when it was tried: then it is not tried again).
  std::unique_ptr<Server> acquire(const ChildCommand& command) {
    const std::string key = serverKey(command);
    {
      std::lock_guard lock(mutex_);
      if (refused_.contains(key)) return nullptr;
      auto& idle = idle_[key];
      while (!idle.empty()) {
        std::unique_ptr<Server> server = std::move(idle.back());
        idle.pop_back();
        // An idle server says nothing: a readable socket is a server that ended.
        if (!readableWithin(server->socket, 0)) return server;
      }
    }
    ChildCommand start{
        command.executable, {}, 0, command.startEnvironment, command.serverEnvironment};
    start.args.assign(command.args.begin(),
                      command.args.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                 command.serverArgs, command.args.size())));
    std::packaged_task<std::unique_ptr<Server>()> task([start] { return launch(start); });
    auto result = task.get_future();
    {
      std::lock_guard lock(queueMutex_);
      queue_.push_back(std::move(task));
    }
    queueReady_.notify_one();
    std::unique_ptr<Server> server = result.get();  // rethrows ChildStartError
    if (!server->refusal.empty()) {
      std::lock_guard lock(mutex_);
      if (refused_.insert(key).second) {
        std::fprintf(stderr,
                     "gpufuzz: note: %s does not serve forks (%s): started afresh for every run\n",
                     command.executable.c_str(), server->refusal.c_str());
      }
      return nullptr;
    }
    return server;
  }

  void giveBack(const std::string& key, std::unique_ptr<Server> server) {
    std::lock_guard lock(mutex_);
    idle_[key].push_back(std::move(server));
  }

  bool refuses(const ChildCommand& command) {
    std::lock_guard lock(mutex_);
    return refused_.contains(serverKey(command));
  }

  void stopIdle() {
    std::map<std::string, std::vector<std::unique_ptr<Server>>> stopping;
    {
      std::lock_guard lock(mutex_);
      stopping.swap(idle_);
    }
  }

 private:
  Pool() : spawner_([this] { spawnLoop(); }) { spawner_.detach(); }

  void spawnLoop() {
    for (;;) {
      std::unique_lock lock(queueMutex_);
      queueReady_.wait(lock, [this] { return !queue_.empty(); });
      auto task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();
    }
  }

  /// Starts `command` as a server and waits for its hello; a command that says none comes
  /// back with `refusal` set (and is not running any more).
  static std::unique_ptr<Server> launch(const ChildCommand& command) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
      throw ChildStartError(std::string("cannot create a socket pair: ") + std::strerror(errno));
    }
    auto server = std::make_unique<Server>();
    server->socket = fds[0];
    ChildProcess::Options options;
    options.fd3 = fds[1];
    options.outputLimit = 0;
    options.environment = {{kForkServerFdVariable, std::to_string(kChildEventsFd)}};
    options.environment.insert(options.environment.end(), command.startEnvironment.begin(),
                               command.startEnvironment.end());
    options.environment.insert(options.environment.end(), command.serverEnvironment.begin(),
                               command.serverEnvironment.end());
    try {
      server->process = std::make_unique<ChildProcess>(command, options);
    } catch (...) {
      ::close(fds[1]);
      throw;
    }
    ::close(fds[1]);
    if (!readableWithin(server->socket, kHelloTimeoutMs)) {
      server->refusal = "no hello within " + std::to_string(kHelloTimeoutMs / 1000) + " s";
    } else if (const std::string hello = receiveMessage(server->socket);
               hello != kForkServerHello) {
      server->refusal = hello.empty() ? "it ended, or closed the socket, without a hello"
                                      : "it said '" + hello.substr(0, 80) + "' for a hello";
    }
    if (!server->refusal.empty()) server->process.reset();  // killed and reaped
    return server;
  }

  std::mutex mutex_;
  std::map<std::string, std::vector<std::unique_ptr<Server>>> idle_;
  std::set<std::string> refused_;
  std::mutex queueMutex_;
  std::condition_variable queueReady_;
  std::deque<std::packaged_task<std::unique_ptr<Server>()>> queue_;
  std::thread spawner_;
};

std::string requestText(const ChildCommand& command, const EnvironmentOverrides& environment) {
  std::string text = "run";
  text.push_back('\0');
  text += std::to_string(environment.size());
  text.push_back('\0');
  for (const auto& [name, value] : environment) {
    text += name + "=" + value;
    text.push_back('\0');
  }
  for (std::size_t i = std::min(command.serverArgs, command.args.size()); i < command.args.size();
       ++i) {
    text += command.args[i];
    text.push_back('\0');
  }
  return text;
}

bool sendRequest(int socket, const std::string& text, int outputFd, int eventsFd) {
  std::vector<int> fds{outputFd};
  if (eventsFd >= 0) fds.push_back(eventsFd);
  return sendMessage(socket, text, fds);
}

}  // namespace

struct ForkedChild::Lease {
  std::string key;
  std::unique_ptr<Server> server;
  bool reusable = false;
};

ForkedChild::ForkedChild(pid_t pid, std::unique_ptr<Lease> lease)
    : pid_(pid), lease_(std::move(lease)) {}

ForkedChild::~ForkedChild() {
  if (lease_->reusable) Pool::instance().giveBack(lease_->key, std::move(lease_->server));
}

int ForkedChild::exitNoticeFd() const {
  return lease_->server->socket;
}

bool ForkedChild::exitNoticed() const {
  return status_.has_value() || readableWithin(lease_->server->socket, 0);
}

std::optional<int> ForkedChild::exitStatus() {
  if (status_) return *status_;
  const std::string notice = receiveMessage(lease_->server->socket);
  std::optional<int> status;
  if (notice.starts_with("exit ")) status = std::atoi(notice.c_str() + 5);
  status_ = status;
  return status;
}

void ForkedChild::release() {
  if (!status_ || !*status_) return;  // the server is gone or out of step: not reused
  lease_->reusable = sendMessage(lease_->server->socket, "reap");
}

void ForkedChild::abandon() {
  lease_->reusable = false;
}

std::unique_ptr<ForkedChild> ForkServers::start(const ChildCommand& command,
                                                const EnvironmentOverrides& environment,
                                                int outputFd, int eventsFd) {
  const std::string request = requestText(command, environment);
  if (request.size() > kForkServerMaxMessage) {
    throw ChildStartError("a fork server request is limited to " +
                          std::to_string(kForkServerMaxMessage) +
                          " bytes of arguments and environment");
  }
  // A server may have died while idle (killed with the other children): try a fresh one once.
  std::string failure;
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto lease = std::make_unique<ForkedChild::Lease>();
    lease->key = serverKey(command);
    lease->server = Pool::instance().acquire(command);
    if (!lease->server) return nullptr;  // not a fork server: the caller starts it afresh
    const int socket = lease->server->socket;
    if (!sendRequest(socket, request, outputFd, eventsFd)) {
      failure = std::string("cannot send to the fork server: ") + std::strerror(errno);
      continue;
    }
    if (!readableWithin(socket, kReplyTimeoutMs)) {
      failure = "the fork server did not answer";
      continue;
    }
    const std::string reply = receiveMessage(socket);
    if (reply.starts_with("pid ")) {
      const pid_t pid = static_cast<pid_t>(std::atol(reply.c_str() + 4));
      if (pid > 0) return std::make_unique<ForkedChild>(pid, std::move(lease));
    }
    if (reply.starts_with("error ")) {
      Pool::instance().giveBack(lease->key, std::move(lease->server));
      throw ChildStartError(command.executable + ": " + reply.substr(6));
    }
    failure = reply.empty() ? "the fork server ended" : "the fork server said '" + reply + "'";
  }
  throw ChildStartError(command.executable + " as a fork server: " + failure);
}

bool ForkServers::refuses(const ChildCommand& command) {
  return Pool::instance().refuses(command);
}

void ForkServers::stopIdle() {
  Pool::instance().stopIdle();
}

}  // namespace gpufuzz
