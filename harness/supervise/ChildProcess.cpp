// ChildProcess.cpp: process groups, pipes and reaping on top of Boost.Process v2's launcher.
//
// Boost.Process 1.81 (v2) starts the child; everything else is done here because, in 1.81:
// posix::bind_fd does not return from on_setup (undefined behaviour); the launcher's close_all
// compares each whitelisted fd with itself and so never closes the gaps between them; a failed
// execve ends the forked child with exit(), running this process's atexit handlers there; the
// launcher leaves a child whose execve failed unreaped; the process handle throws after the
// child has started when pidfd_open(2) is refused; and the exit code it reports hides signals.

#include "harness/supervise/ChildProcess.h"

#include "harness/base/OutsideText.h"
#include "harness/protocol/SupervisedChild.h"
#include "harness/supervise/ForkServer.h"
#include "harness/supervise/Strays.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/process/v2/default_launcher.hpp>
#include <boost/process/v2/process.hpp>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

extern char** environ;

namespace gpufuzz {

namespace asio = boost::asio;
namespace bp = boost::process::v2;
using Clock = std::chrono::steady_clock;

namespace {

// How long a child may take to die after SIGKILL before it is left to a background reaper (a
// process in uninterruptible sleep, e.g. inside a driver call, dies only when the call returns).
constexpr auto kKillGrace = std::chrono::seconds(5);
// How long the pipes may stay open after the child is reaped and its group killed: only a
// descendant that left the group (setsid) can hold them that long.
constexpr auto kPipeGrace = std::chrono::milliseconds(500);
constexpr auto kMaxExitPoll = std::chrono::milliseconds(20);
constexpr std::size_t kMaxEventLine = 4096;
// A pipe is read at most this much at a time before the other pipe, the exit and the deadline
// get their turn: a child flooding its output delays nothing else.
constexpr std::size_t kMaxDrain = 1024 * 1024;

// --- the registry of live process groups, for killAllChildren() ---------------------------

constexpr std::size_t kRegistrySlots = 4096;  // --jobs children and their fork servers
std::atomic<pid_t> liveGroups[kRegistrySlots];
std::atomic<int> killersRunning{0};
std::atomic<unsigned> killAllCount{0};
static_assert(std::atomic<pid_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free &&
                  std::atomic<unsigned>::is_always_lock_free,
              "killAllChildren() must be async-signal-safe");

/// A live group in the registry. Released before its leader is reaped: until then the group id
/// cannot be reused, so killAllChildren() never hits an unrelated group.
class GroupRegistration {
 public:
  explicit GroupRegistration(pid_t pgid) : killAllAtStart_(killAllCount.load()) {
    for (auto& slot : liveGroups) {
      pid_t expected = 0;
      if (slot.compare_exchange_strong(expected, pgid)) {
        slot_ = &slot;
        return;
      }
    }
  }
  GroupRegistration(const GroupRegistration&) = delete;
  GroupRegistration& operator=(const GroupRegistration&) = delete;
  ~GroupRegistration() { release(); }

  bool registered() const { return slot_ != nullptr; }
  bool interrupted() const { return killAllCount.load() != killAllAtStart_; }
  void release() {
    if (!slot_) return;
    slot_->store(0);
    // A killAllChildren() that read this slot before it was cleared may still send its kill.
    while (killersRunning.load() != 0)
      std::this_thread::yield();
    slot_ = nullptr;
  }

 private:
  std::atomic<pid_t>* slot_ = nullptr;
  unsigned killAllAtStart_;
};

// --- small helpers --------------------------------------------------------------------------

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    reset();
    fd_ = other.release();
    return *this;
  }
  ~UniqueFd() { reset(); }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  UniqueFd read, write;
};

Pipe makePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw ChildStartError(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

/// The child's stdout and stderr: a capture pipe, or /dev/null (no read end) when nothing of it
/// is kept. A pipe nobody reads would block the child once full (a fork server, chatty at start).
Pipe makeOutput(std::size_t outputLimit) {
  if (outputLimit > 0) return makePipe();
  const int devNull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devNull < 0) {
    throw ChildStartError(std::string("cannot open /dev/null: ") + std::strerror(errno));
  }
  return Pipe{UniqueFd(), UniqueFd(devNull)};
}

/// Keeps the last `limit` bytes of a stream, in amortised constant time per byte.
class OutputTail {
 public:
  explicit OutputTail(std::size_t limit) : limit_(limit) {}
  void append(std::string_view bytes) {
    if (limit_ == 0) return;
    if (bytes.size() >= limit_) {
      data_.assign(bytes.substr(bytes.size() - limit_));
      return;
    }
    data_.append(bytes);
    if (data_.size() > 2 * limit_) data_.erase(0, data_.size() - limit_);
  }
  std::string take() {
    if (data_.size() > limit_) data_.erase(0, data_.size() - limit_);
    return std::move(data_);
  }

 private:
  std::size_t limit_;
  std::string data_;
};

bp::error_code errorOf(int error) {
  return bp::error_code(error, bp::system_category());
}

bp::error_code lastError() {
  return errorOf(errno);
}

/// The launcher initializer: everything the child needs between fork and exec. That code runs in
/// a copy of one thread of a multithreaded process, so it calls async-signal-safe functions only.
struct ChildSetup {
  const char* const* envp;  // null: this process's environment
  int outputFd;
  int eventsFd;  // -1: no events pipe
  pid_t parent;

  bp::error_code on_setup(bp::posix::default_launcher& launcher, const bp::filesystem::path&,
                          const char* const*) const {
    if (envp) launcher.env = envp;
    if (eventsFd >= 0) launcher.fd_whitelist.push_back(ChildProcess::kEventsFd);
    return {};
  }

  bp::error_code on_exec_setup(bp::posix::default_launcher&, const bp::filesystem::path&,
                               const char* const*) const {
    // Under Yama ptrace_scope 1 only ancestors may attach; the harness's gdb is let in.
    if (const int error = becomeSupervisedChild(parent, parent)) return errorOf(error);
    // Output and events first: either pipe end may be descriptor 0 here.
    if (const int error = placeOutputAndEvents(outputFd, eventsFd)) return errorOf(error);
    const int devNull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devNull < 0) return lastError();
    const bool stdinPlaced = devNull == STDIN_FILENO ? ::fcntl(devNull, F_SETFD, 0) == 0
                                                     : ::dup2(devNull, STDIN_FILENO) >= 0;
    if (!stdinPlaced) return lastError();
    // The launcher's close_all leaves fds between its whitelisted ones open; close them at exec.
    // (Kernels before 5.11 refuse the flag: then only descriptors without O_CLOEXEC that other
    // code of this process opened below the launcher's own pipe can reach the child.)
    const int firstOther = eventsFd >= 0 ? ChildProcess::kEventsFd + 1 : ChildProcess::kEventsFd;
    ::close_range(static_cast<unsigned>(firstOther), ~0U, CLOSE_RANGE_CLOEXEC);
    return {};
  }

  // The launcher would go on to exit(), running this process's atexit handlers in the child. The
  // launcher's detection of this hook expects a different signature than it calls, hence a
  // template that accepts both.
  template <typename... Args>
  void on_exec_error(Args&&...) const {
    ::_exit(127);
  }
};

bool sigchldIsIgnored() {
  struct sigaction current {};
  ::sigaction(SIGCHLD, nullptr, &current);
  return current.sa_handler == SIG_IGN || (current.sa_flags & SA_NOCLDWAIT) != 0;
}

/// Blocks until `pid` is reaped; its status, or 0 when it cannot be had.
int waitForStatus(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 0;
  }
  return status;
}

/// Reaps `pid` on a thread of its own, for a child that did not die when killed.
void reapInBackground(pid_t pid) {
  std::thread([pid] {
    waitForStatus(pid);
    strays::disown(pid);
  }).detach();
}

}  // namespace

// --- ChildProcess ------------------------------------------------------------------------------

struct ChildProcess::Impl {
  // Declared first: descriptors and timers below must go before their io_context.
  asio::io_context io;
  pid_t pid = -1;
  std::optional<GroupRegistration> registration;
  Clock::time_point startedAt = Clock::now();
  Clock::time_point reapedAt;

  asio::posix::stream_descriptor events{io}, output{io}, exitWatch{io};
  asio::steady_timer deadlineTimer{io}, exitPoll{io}, pipeGrace{io};
  Clock::time_point armedFor = Clock::time_point::min();  // min: no deadline wait pending
  std::chrono::milliseconds exitPollInterval{1};

  // A whole pipe's default capacity; not zeroed: each child's run would pay for filling it.
  std::array<char, 64 * 1024> buffer;
  std::string partialLine;
  bool pausing = false;  // the observer paused: event bytes wait in `pendingEvents`
  std::string pendingEvents;
  OutputTail tail;
  ChildObserver* observer = nullptr;

  RunCancel* cancelToken = nullptr;  // Options::cancel
  // Declared after `io`, so it ends first: no cancel posts to a gone event loop.
  std::optional<RunCancel::Watch> cancelWatch;
  std::unique_ptr<ForkedChild> forked;   // set when a fork server started the child
  std::uint64_t run = strays::newRun();  // its tag (Strays.h)

  bool ran = false, watching = false, exited = false, reaped = false;
  bool killedOnDeadline = false, unkillable = false, interrupted = false, serverLost = false;
  bool cancelled = false;
  int status = 0;

  explicit Impl(std::size_t outputLimit) : tail(outputLimit) {}
  ~Impl();

  /// Once the child exists, a failure leaves it for the destructor to kill and reap.
  void spawn(const ChildCommand& command, const Options& options);
  void fork(const ChildCommand& command, const Options& options);
  /// Registers the child's group and watches its pipes (and its exit through `exitFd`, if any).
  void watch(Pipe& outputPipe, std::optional<Pipe>& eventsPipe, int exitFd);
  /// The options' environment with the child's tag.
  EnvironmentOverrides taggedEnvironment(const Options& options) const;

  // Reading. All reads are ours (wait for readiness, then read(2)), so the drain before a
  // deadline sees every byte in order: nothing can sit in a completed-but-undelivered read.
  template <typename Sink>
  void watchPipe(asio::posix::stream_descriptor& pipe, Sink sink);
  template <typename Sink>
  void continueReading(asio::posix::stream_descriptor& pipe, Sink sink);
  enum class Drained { Empty, More, Closed };
  template <typename Sink>
  Drained drain(asio::posix::stream_descriptor& pipe, Sink& sink);
  void closePipe(asio::posix::stream_descriptor& pipe);
  void onEventBytes(std::string_view bytes);
  void onOutputBytes(std::string_view bytes) { tail.append(bytes); }

  // Ending.
  void watchExit();
  bool hasExited() const;
  void onExited();
  void reap();
  void sweepStrays();
  void abandon();
  void killAndReapNow();

  // Deadlines, and a cancel.
  void armDeadline();
  void onDeadlineTimer();
  void onCancel();
  /// SIGKILL to the group; a child still there after kKillGrace is abandoned.
  void killGroup();
};

void ChildProcess::Impl::spawn(const ChildCommand& command, const Options& options) {
  cancelToken = options.cancel;
  if (sigchldIsIgnored()) {
    throw ChildStartError("SIGCHLD is ignored in this process: exit statuses would be lost");
  }
  strays::prepare();
  // A command known not to serve forks goes straight to a fresh start (fork() finds that out
  // once, the first time).
  if (options.forkServer && !ForkServers::refuses(command)) return fork(command, options);
  Pipe outputPipe = makeOutput(options.outputLimit);
  std::optional<Pipe> eventsPipe;
  if (options.eventsPipe) eventsPipe = makePipe();

  EnvironmentOverrides overrides = taggedEnvironment(options);
  overrides.insert(overrides.end(), command.startEnvironment.begin(),
                   command.startEnvironment.end());
  std::vector<std::string> environment;
  std::vector<const char*> envp;
  for (char** entry = environ; *entry; ++entry) {
    const std::string_view text(*entry);
    const std::string_view key = text.substr(0, text.find('='));
    bool replaced = false;
    for (const auto& [name, value] : overrides)
      replaced = replaced || name == key;
    if (!replaced) environment.emplace_back(text);
  }
  for (const auto& [name, value] : overrides)
    environment.push_back(name + "=" + value);
  for (const std::string& entry : environment)
    envp.push_back(entry.c_str());
  envp.push_back(nullptr);

  const ChildSetup setup{envp.data(), outputPipe.write.get(),
                         eventsPipe ? eventsPipe->write.get() : options.fd3, ::getpid()};
  bp::posix::default_launcher launcher;
  bp::error_code error;
  // Until own() has it, a sweep must not look at this process's children (Strays.h).
  std::optional<strays::SpawnGuard> guard(std::in_place);
  try {
    auto process = launcher(io.get_executor(), error, bp::filesystem::path(command.executable),
                            command.args, setup);
    // Unmanaged from here on: its destructor would otherwise waitpid(WNOHANG) and kill a pid
    // that, once reaped by us, may belong to another child.
    if (!error) process.detach();
  } catch (const boost::system::system_error& e) {
    // Thrown by the process handle's pidfd_open(2) after the child started; we go on without it.
    if (launcher.pid <= 0) throw ChildStartError(command.executable + ": " + e.what());
  }
  if (error) {
    if (launcher.pid > 0) waitForStatus(launcher.pid);  // exited at once: see on_exec_error
    throw ChildStartError(command.executable + ": " + error.message());
  }
  pid = launcher.pid;
  strays::own(pid);
  guard.reset();  // before anything below can reap, and so sweep
  const long pidfd = ::syscall(SYS_pidfd_open, pid, 0);
  watch(outputPipe, eventsPipe, static_cast<int>(pidfd));  // without a pidfd, exit is polled
}

void ChildProcess::Impl::fork(const ChildCommand& command, const Options& options) {
  Pipe outputPipe = makeOutput(options.outputLimit);
  std::optional<Pipe> eventsPipe;
  if (options.eventsPipe) eventsPipe = makePipe();
  forked = ForkServers::start(command, taggedEnvironment(options), outputPipe.write.get(),
                              eventsPipe ? eventsPipe->write.get() : -1);
  if (!forked) {  // it does not serve forks: started afresh
    Options fresh = options;
    fresh.forkServer = false;
    return spawn(command, fresh);
  }
  pid = forked->pid();
  // The server's exit notice is how the exit is seen: the child is not ours to wait for.
  watch(outputPipe, eventsPipe, ::fcntl(forked->exitNoticeFd(), F_DUPFD_CLOEXEC, 0));
}

void ChildProcess::Impl::watch(Pipe& outputPipe, std::optional<Pipe>& eventsPipe, int exitFd) {
  // The child holds its own copies of the write ends; without closing ours the read ends would
  // never see end of file.
  outputPipe.write.reset();
  if (eventsPipe) eventsPipe->write.reset();

  registration.emplace(pid);
  if (!registration->registered()) {
    if (exitFd >= 0) ::close(exitFd);
    killAndReapNow();
    throw ChildStartError("too many live children (" + std::to_string(kRegistrySlots) + ")");
  }
  if (exitFd >= 0) exitWatch.assign(exitFd);
  if (cancelToken) {
    // Called on the canceller's thread: the kill itself runs on this child's event loop.
    cancelWatch.emplace(*cancelToken, [this] { asio::post(io, [this] { onCancel(); }); });
  }
  if (outputPipe.read.get() >= 0) {
    output.assign(outputPipe.read.release());
    output.non_blocking(true);
  }
  if (eventsPipe) {
    events.assign(eventsPipe->read.release());
    events.non_blocking(true);
  }
}

EnvironmentOverrides ChildProcess::Impl::taggedEnvironment(const Options& options) const {
  EnvironmentOverrides overrides = options.environment;
  overrides.push_back(strays::tagFor(run));
  return overrides;
}

ChildProcess::Impl::~Impl() {
  if (pid > 0 && !reaped) killAndReapNow();
  strays::runEnds(run);
}

template <typename Sink>
void ChildProcess::Impl::watchPipe(asio::posix::stream_descriptor& pipe, Sink sink) {
  pipe.async_wait(asio::posix::descriptor_base::wait_read,
                  [this, &pipe, sink](const boost::system::error_code& ec) mutable {
                    if (ec) return;  // closed
                    continueReading(pipe, sink);
                  });
}

template <typename Sink>
void ChildProcess::Impl::continueReading(asio::posix::stream_descriptor& pipe, Sink sink) {
  switch (drain(pipe, sink)) {
    case Drained::Closed:
      return closePipe(pipe);
    case Drained::Empty:
      return watchPipe(pipe, sink);
    case Drained::More:
      // Asio's reactor is edge-triggered: what is left would not wake a wait. Come back after
      // the handlers that are ready now.
      asio::post(io, [this, &pipe, sink]() mutable {
        if (pipe.is_open()) continueReading(pipe, sink);
      });
  }
}

/// Reads what the pipe holds now, up to kMaxDrain.
template <typename Sink>
ChildProcess::Impl::Drained ChildProcess::Impl::drain(asio::posix::stream_descriptor& pipe,
                                                      Sink& sink) {
  for (std::size_t taken = 0; taken < kMaxDrain;) {
    const ssize_t n = ::read(pipe.native_handle(), buffer.data(), buffer.size());
    if (n > 0) {
      sink(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
      taken += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? Drained::Empty : Drained::Closed;
  }
  return Drained::More;
}

void ChildProcess::Impl::closePipe(asio::posix::stream_descriptor& pipe) {
  boost::system::error_code ignored;
  pipe.close(ignored);
  if (reaped && !events.is_open() && !output.is_open()) pipeGrace.cancel();
}

void ChildProcess::Impl::onEventBytes(std::string_view bytes) {
  if (pausing) {
    pendingEvents.append(bytes);
    return;
  }
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (c != '\n') {
      // A line longer than any event is garbage: keep its head, which still fails to parse.
      if (partialLine.size() < kMaxEventLine) partialLine.push_back(c);
      continue;
    }
    observer->onEventLine(partialLine);
    partialLine.clear();
    if (observer->paused() && !exited) {
      pausing = true;
      pendingEvents.assign(bytes.substr(i + 1));
      tail.take();  // the next call's tail starts here
      armedFor = Clock::time_point::min();
      deadlineTimer.cancel();
      io.stop();
      return;
    }
  }
  armDeadline();
}

void ChildProcess::Impl::watchExit() {
  if (exitWatch.is_open()) {
    exitWatch.async_wait(asio::posix::descriptor_base::wait_read,
                         [this](const boost::system::error_code& ec) {
                           if (!ec) onExited();
                         });
    return;
  }
  exitPoll.expires_after(exitPollInterval);
  exitPoll.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    if (hasExited()) return onExited();
    exitPollInterval = std::min(exitPollInterval * 2, kMaxExitPoll);
    watchExit();
  });
}

/// Whether the child has exited, leaving it unreaped.
bool ChildProcess::Impl::hasExited() const {
  if (forked) return forked->exitNoticed();
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

void ChildProcess::Impl::onExited() {
  exited = true;
  deadlineTimer.cancel();
  exitPoll.cancel();
  boost::system::error_code ignored;
  exitWatch.close(ignored);
  // The leader is a zombie until reaped, so its group id is still ours: end the grandchildren.
  ::kill(-pid, SIGKILL);
  reap();
  if (!events.is_open() && !output.is_open()) return;
  pipeGrace.expires_after(kPipeGrace);
  pipeGrace.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    closePipe(events);
    closePipe(output);
  });
}

void ChildProcess::Impl::reap() {
  cancelWatch.reset();
  interrupted = registration && registration->interrupted();
  if (forked) {
    const std::optional<int> reported = forked->exitStatus();
    serverLost = !reported;
    status = reported.value_or(SIGKILL);  // a server's children die with it
    registration.reset();
    forked->release();
  } else {
    registration.reset();
    status = waitForStatus(pid);
    strays::disown(pid);
  }
  reaped = true;
  reapedAt = Clock::now();
  sweepStrays();
}

/// The descendants that left the group came to this process as orphans when the child died.
void ChildProcess::Impl::sweepStrays() {
  strays::sweep(run, Clock::now() + kPipeGrace);
  strays::runEnds(run);
}

/// Gives up on a child that outlived SIGKILL: leaves it to a background reaper.
void ChildProcess::Impl::abandon() {
  cancelWatch.reset();
  exited = reaped = unkillable = true;
  status = SIGKILL;  // as waitpid would report a death by SIGKILL
  interrupted = registration && registration->interrupted();
  registration.reset();
  if (forked) {
    forked->abandon();  // its server is left waiting for it, and not reused
  } else {
    reapInBackground(pid);
  }
  reapedAt = Clock::now();
  sweepStrays();
}

void ChildProcess::Impl::killAndReapNow() {
  ::kill(-pid, SIGKILL);
  const auto giveUp = Clock::now() + kKillGrace;
  while (!hasExited()) {
    if (Clock::now() > giveUp) return abandon();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  reap();
}

void ChildProcess::Impl::armDeadline() {
  if (exited || killedOnDeadline || cancelled) return;
  const Clock::time_point due = observer->deadline();
  // A wait that is due earlier than needed only re-arms itself: cheaper than re-arming on
  // every event, which moves the deadline later.
  if (armedFor != Clock::time_point::min() && due >= armedFor) return;
  if (due == Clock::time_point::max()) return;
  armedFor = due;
  deadlineTimer.expires_at(due);
  deadlineTimer.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) onDeadlineTimer();
  });
}

void ChildProcess::Impl::onDeadlineTimer() {
  armedFor = Clock::time_point::min();
  if (exited) return;
  if (events.is_open()) {
    // What the child wrote before the deadline, as far as kMaxDrain at a time: a child that
    // floods its events pipe with a line that never ends is not waited for.
    auto sink = [this](std::string_view bytes) { onEventBytes(bytes); };
    Drained drained;
    for (std::size_t rounds = 0; (drained = drain(events, sink)) == Drained::More && rounds < 4;)
      ++rounds;
    if (drained == Drained::Closed) closePipe(events);
    if (pausing) return;  // the next call arms the deadline it then has
  }
  if (hasExited()) return;  // the exit watch takes it from here
  const auto now = Clock::now();
  if (now >= observer->deadline() && observer->onDeadline(now)) {
    killedOnDeadline = true;
    killGroup();
    return;
  }
  armDeadline();
}

void ChildProcess::Impl::onCancel() {
  if (exited || killedOnDeadline || cancelled) return;
  cancelled = true;
  killGroup();
}

void ChildProcess::Impl::killGroup() {
  ::kill(-pid, SIGKILL);
  deadlineTimer.expires_after(kKillGrace);
  deadlineTimer.async_wait([this](const boost::system::error_code& ec) {
    if (ec || exited) return;
    abandon();
    boost::system::error_code ignored;
    exitWatch.close(ignored);
    exitPoll.cancel();
    closePipe(events);
    closePipe(output);
  });
}

ChildProcess::ChildProcess(const ChildCommand& command, const Options& options)
    : impl_(std::make_unique<Impl>(options.outputLimit)) {
  impl_->spawn(command, options);
}

ChildProcess::~ChildProcess() = default;

pid_t ChildProcess::pid() const {
  return impl_->pid;
}

ChildExit ChildProcess::run(ChildObserver& observer) {
  std::optional<ChildExit> exit;
  while (!(exit = runUntilPaused(observer))) {
  }
  return std::move(*exit);
}

std::optional<ChildExit> ChildProcess::runUntilPaused(ChildObserver& observer) {
  Impl& p = *impl_;
  if (p.ran) throw std::logic_error("ChildProcess: the child has already been run to its end");
  p.observer = &observer;
  if (!p.watching) {
    p.watching = true;
    strays::runBegins(p.run);
    if (p.events.is_open()) {
      p.watchPipe(p.events, [&p](std::string_view bytes) { p.onEventBytes(bytes); });
    }
    if (p.output.is_open()) {
      p.watchPipe(p.output, [&p](std::string_view bytes) { p.onOutputBytes(bytes); });
    }
    p.watchExit();
  } else {
    p.io.restart();
  }
  if (p.pausing) {
    // What came after the line that paused the last call.
    p.pausing = false;
    const std::string pending = std::move(p.pendingEvents);
    p.pendingEvents.clear();
    p.onEventBytes(pending);
    if (p.pausing) return std::nullopt;
  }
  p.armDeadline();
  p.io.run();
  if (p.pausing) return std::nullopt;
  p.ran = true;

  ChildExit exit;
  exit.status = p.status;
  exit.killedOnDeadline = p.killedOnDeadline;
  exit.interrupted = p.interrupted;
  exit.unkillable = p.unkillable;
  exit.serverLost = p.serverLost;
  exit.cancelled = p.cancelled;
  // Whatever the child printed, as text: the tail goes into findings, reports and messages.
  exit.outputTail = outsideText(p.tail.take());
  exit.wall = std::chrono::duration_cast<std::chrono::microseconds>(p.reapedAt - p.startedAt);
  return exit;
}

void killAllChildren() noexcept {
  killersRunning.fetch_add(1);
  killAllCount.fetch_add(1);
  for (auto& slot : liveGroups) {
    const pid_t pgid = slot.load();
    if (pgid > 0) ::kill(-pgid, SIGKILL);
  }
  killersRunning.fetch_sub(1);
}

std::optional<std::chrono::nanoseconds> processCpuTime(pid_t pid) {
  clockid_t clock;
  timespec ts{};
  if (::clock_getcpuclockid(pid, &clock) == 0 && ::clock_gettime(clock, &ts) == 0) {
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
  }
  // Where the kernel refuses another process's CPU clock: utime and stime, in clock ticks.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return std::nullopt;
  const auto afterName = line.rfind(')');  // the name may contain spaces and parentheses
  if (afterName == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(afterName + 2));
  std::string skip;
  for (int i = 3; i < 14; ++i)
    fields >> skip;  // state .. cmajflt
  unsigned long long utime = 0, stime = 0;
  if (!(fields >> utime >> stime)) return std::nullopt;
  const long ticksPerSecond = ::sysconf(_SC_CLK_TCK);
  if (ticksPerSecond <= 0) return std::nullopt;
  return std::chrono::nanoseconds((utime + stime) * 1'000'000'000ULL /
                                  static_cast<unsigned long long>(ticksPerSecond));
}

std::optional<std::string> findOnPath(std::string_view name) {
  const char* path = std::getenv("PATH");
  if (!path || name.empty()) return std::nullopt;
  std::string_view dirs(path);
  while (true) {
    const auto colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/";
    candidate += name;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (colon == std::string_view::npos) return std::nullopt;
    dirs.remove_prefix(colon + 1);
  }
}

CapturedRun runCaptured(const ChildCommand& command, std::chrono::milliseconds timeout,
                        std::size_t outputLimit) {
  ChildProcess::Options options;
  options.outputLimit = outputLimit;
  ChildProcess child(command, options);

  class WallTimeout final : public ChildObserver {
   public:
    explicit WallTimeout(Clock::time_point due) : due_(due) {}
    void onEventLine(std::string_view) override {}
    Clock::time_point deadline() const override { return due_; }
    bool onDeadline(Clock::time_point) override {
      due_ = Clock::time_point::max();
      return true;
    }

   private:
    Clock::time_point due_;
  } observer(Clock::now() + timeout);

  ChildExit exit = child.run(observer);
  return CapturedRun{exit.status, exit.killedOnDeadline, std::move(exit.outputTail)};
}

}  // namespace gpufuzz
