// Strays.cpp: the subreaper's sweep and the watchdog (Strays.h).
#include "harness/supervise/Strays.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
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
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

namespace gpufuzz::strays {

namespace {

// --- async-signal-safe pieces (the watchdog runs in a fork of a multithreaded process) -------

/// Appends the decimal digits of `value` to `out` (no allocation).
char* appendNumber(char* out, unsigned long long value) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (n > 0)
    *out++ = digits[--n];
  return out;
}

/// Parses a decimal pid; 0 when `name` is not one.
pid_t parsePid(const char* name) {
  long value = 0;
  if (*name == '\0') return 0;
  for (; *name; ++name) {
    if (*name < '0' || *name > '9') return 0;
    value = value * 10 + (*name - '0');
    if (value > 1L << 30) return 0;
  }
  return static_cast<pid_t>(value);
}

/// Finds an environment entry that starts with `prefix` in a stream of NUL-separated entries,
/// chunk by chunk. `matched`: how much of the prefix the current entry has matched, or -1.
struct EntryMatcher {
  const char* prefix;
  long length;
  long matched = 0;
  bool found = false;
  /// Where the first entry that matched continues, within the chunk that completed it.
  const char* rest = nullptr;

  void feed(const char* bytes, long n) {
    for (long i = 0; i < n && !found; ++i) {
      const char c = bytes[i];
      if (c == '\0') {
        matched = 0;
      } else if (matched >= 0) {
        matched = c == prefix[matched] ? matched + 1 : -1;
        if (matched == length) {
          found = true;
          rest = bytes + i + 1;
        }
      }
    }
  }
};

/// Whether /proc/<pid>/environ carries an entry starting with `prefix`.
bool environHas(pid_t pid, const char* prefix, long length) {
  char path[48] = "/proc/";
  char* end = appendNumber(path + 6, static_cast<unsigned long long>(pid));
  std::memcpy(end, "/environ", 9);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  EntryMatcher matcher{prefix, length};
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    matcher.feed(chunk, n);
    if (matcher.found) break;
  }
  ::close(fd);
  return matcher.found;
}

/// One pass of the watchdog: SIGKILL to every process whose environment has `prefix`; how many.
int killTagged(const char* prefix, long length) {
  const int proc = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return 0;
  const pid_t self = static_cast<pid_t>(::syscall(SYS_getpid));
  int killed = 0;
  alignas(8) char entries[8192];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, proc, entries, sizeof entries);
    if (n <= 0) break;
    for (long at = 0; at < n;) {
      struct Entry {
        unsigned long long ino;
        long long off;
        unsigned short reclen;
        unsigned char type;
        char name[1];
      };
      const auto* entry = reinterpret_cast<const Entry*>(entries + at);
      at += entry->reclen;
      const pid_t pid = parsePid(entry->name);
      if (pid <= 1 || pid == self) continue;
      // A pidfd first, so that the process read is the one signalled even if the pid is reused.
      const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
      if (environHas(pid, prefix, length)) {
        const bool sent = pidfd >= 0
                              ? ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0) == 0
                              : ::kill(pid, SIGKILL) == 0;
        killed += sent;
      }
      if (pidfd >= 0) ::close(pidfd);
    }
  }
  ::close(proc);
  return killed;
}

constexpr int kWatchdogPasses = 200;
constexpr long kWatchdogPauseNs = 5'000'000;

[[noreturn]] void watchdogMain(int lifeline, const char* prefix, long length) {
  ::setsid();  // no terminal's signals; no group a kill of the harness's group reaches
  const int kept = ::fcntl(lifeline, F_DUPFD_CLOEXEC, 3);
  if (kept < 0) ::_exit(1);
  ::close_range(0, static_cast<unsigned>(kept) - 1, 0);
  ::close_range(static_cast<unsigned>(kept) + 1, ~0U, 0);
  // Nothing of the harness's output stays open here: a pipeline reading it ends with the harness.
  for (int fd = 0; fd < 3; ++fd)
    ::open("/dev/null", O_RDWR);
  if (::chdir("/") != 0) {
    // The directory only matters for unmounting; going on is fine.
  }
  struct sigaction ignored {};
  ignored.sa_handler = SIG_IGN;
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2})
    ::sigaction(sig, &ignored, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::prctl(PR_SET_NAME, reinterpret_cast<unsigned long>("gpufuzz-watch"), 0UL, 0UL, 0UL);

  char byte;
  while (::read(kept, &byte, 1) != 0) {
    if (errno != EINTR && errno != EAGAIN) break;
  }
  for (int pass = 0; pass < kWatchdogPasses; ++pass) {
    if (killTagged(prefix, length) == 0) break;
    const timespec pause{0, kWatchdogPauseNs};
    ::nanosleep(&pause, nullptr);
  }
  ::_exit(0);
}

// --- the harness's side ------------------------------------------------------------------------

struct State {
  std::once_flag prepared;
  std::string harness;  // <pid>.<start time>
  std::string prefix;   // GPUFUZZ_CHILD=<harness>/
  std::atomic<std::uint64_t> nextRun{1};
  pid_t watchdog = 0;
  int childrenFd = -1;  // /proc/self/task/<pid>/children

  std::shared_mutex spawns;  // shared: a spawn in progress; exclusive: a sweep deciding
  std::mutex sets;
  std::set<pid_t> own;
  std::set<std::uint64_t> live;
};

State& state() {
  static State* s = new State;  // never destroyed: children may be reaped during exit
  return *s;
}

void startWatchdog(State& s) {
  int lifeline[2], report[2];
  if (::pipe2(lifeline, O_CLOEXEC) != 0) return;
  if (::pipe2(report, O_CLOEXEC) != 0) {
    ::close(lifeline[0]);
    ::close(lifeline[1]);
    return;
  }
  const char* prefix = s.prefix.c_str();
  const long length = static_cast<long>(s.prefix.size());
  const pid_t middle = ::fork();
  if (middle == 0) {
    // A fork between its parent and the watchdog, so that the watchdog is nobody's child here:
    // orphaned at once, it goes to init (this process is not the subreaper yet).
    ::close(lifeline[1]);
    ::close(report[0]);
    const pid_t watchdog = ::fork();
    if (watchdog == 0) {
      ::close(report[1]);
      watchdogMain(lifeline[0], prefix, length);
    }
    const int value = static_cast<int>(watchdog);
    if (::write(report[1], &value, sizeof value) != sizeof value) ::_exit(1);
    ::_exit(0);
  }
  ::close(lifeline[0]);
  ::close(report[1]);
  if (middle > 0) {
    int status = 0;
    while (::waitpid(middle, &status, 0) < 0 && errno == EINTR) {
    }
    int value = 0;
    if (::read(report[0], &value, sizeof value) == sizeof value && value > 0) s.watchdog = value;
  }
  ::close(report[0]);
  // lifeline[1] stays open for the life of this process (close-on-exec: no child holds it).
}

struct ProcStat {
  char state = '?';
  pid_t group = 0;
};

std::optional<ProcStat> readStat(pid_t pid) {
  char path[48] = "/proc/";
  char* end = appendNumber(path + 6, static_cast<unsigned long long>(pid));
  std::memcpy(end, "/stat", 6);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char text[512];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  text[n] = '\0';
  const char* close = std::strrchr(text, ')');  // the name may hold spaces and parentheses
  if (!close || close[1] == '\0') return std::nullopt;
  ProcStat stat;
  int group = 0;
  if (std::sscanf(close + 1, " %c %*d %d", &stat.state, &group) != 2) return std::nullopt;
  stat.group = static_cast<pid_t>(group);
  return stat;
}

/// The run a stray's environment names, if it carries this harness's tag.
std::optional<std::uint64_t> runOf(pid_t pid, const std::string& prefix) {
  char path[48] = "/proc/";
  char* end = appendNumber(path + 6, static_cast<unsigned long long>(pid));
  std::memcpy(end, "/environ", 9);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  EntryMatcher matcher{prefix.c_str(), static_cast<long>(prefix.size())};
  std::array<char, 4096> chunk;
  std::optional<std::uint64_t> run;
  for (;;) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    matcher.feed(chunk.data(), n);
    if (!matcher.found) continue;
    // The digits after the prefix; an entry cut by the chunk's end reads as no run.
    std::uint64_t value = 0;
    bool any = false;
    for (const char* c = matcher.rest; c < chunk.data() + n && *c >= '0' && *c <= '9'; ++c) {
      value = value * 10 + static_cast<std::uint64_t>(*c - '0');
      any = true;
    }
    if (any) run = value;
    break;
  }
  ::close(fd);
  return run;
}

/// The pids in /proc/self/task/<pid>/children: where orphans come to (the first live thread).
std::vector<pid_t> children(State& s) {
  std::vector<pid_t> pids;
  if (s.childrenFd < 0) return pids;
  std::array<char, 4096> text;
  std::string all;
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(s.childrenFd, text.data(), text.size(), at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    all.append(text.data(), static_cast<std::size_t>(n));
    at += n;
  }
  const char* c = all.c_str();
  while (*c) {
    char* next = nullptr;
    const long pid = std::strtol(c, &next, 10);
    if (next == c) break;
    pids.push_back(static_cast<pid_t>(pid));
    c = next;
  }
  return pids;
}

}  // namespace

void prepare() {
  State& s = state();
  std::call_once(s.prepared, [&s] {
    timespec now{};
    ::clock_gettime(CLOCK_BOOTTIME, &now);
    s.harness = std::to_string(::getpid()) + "." + std::to_string(now.tv_sec) + "." +
                std::to_string(now.tv_nsec);
    s.prefix = std::string(kTagVariable) + "=" + s.harness + "/";
    const std::string path = "/proc/self/task/" + std::to_string(::getpid()) + "/children";
    s.childrenFd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    startWatchdog(s);
    // After the watchdog: it must not become a child of this process.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL);
  });
}

std::uint64_t newRun() {
  return state().nextRun.fetch_add(1);
}

std::pair<std::string, std::string> tagFor(std::uint64_t run) {
  prepare();
  return {kTagVariable, state().harness + "/" + std::to_string(run)};
}

std::string harnessPrefix() {
  prepare();
  return state().prefix;
}

SpawnGuard::SpawnGuard() : lock_(state().spawns) {}

void own(pid_t pid) {
  State& s = state();
  const std::lock_guard lock(s.sets);
  s.own.insert(pid);
}

void disown(pid_t pid) {
  State& s = state();
  const std::lock_guard lock(s.sets);
  s.own.erase(pid);
}

void runBegins(std::uint64_t run) {
  State& s = state();
  const std::lock_guard lock(s.sets);
  s.live.insert(run);
}

void runEnds(std::uint64_t run) {
  State& s = state();
  const std::lock_guard lock(s.sets);
  s.live.erase(run);
}

int sweep(std::uint64_t run, Clock::time_point until) {
  State& s = state();
  if (s.childrenFd < 0) return 0;
  const pid_t ourGroup = ::getpgrp();
  int found = 0;
  auto pause = std::chrono::microseconds(100);
  for (;;) {
    int thisPass = 0;
    {
      // No spawn in progress: every child of ours that ChildProcess started is in `own`, and
      // nobody but this sweep reaps a child that is not, so no pid below can be reused meanwhile.
      const std::unique_lock exclusive(s.spawns);
      std::vector<pid_t> strays;
      {
        const std::lock_guard lock(s.sets);
        for (const pid_t pid : children(s))
          if (!s.own.contains(pid)) strays.push_back(pid);
      }
      for (const pid_t pid : strays) {
        const std::optional<ProcStat> stat = readStat(pid);
        if (!stat || stat->group == ourGroup) continue;  // gone, or a helper of this process
        if (stat->state == 'Z') {
          ::waitpid(pid, nullptr, WNOHANG);
          ++thisPass;
          continue;
        }
        if (const auto owner = runOf(pid, s.prefix); owner && *owner != run) {
          const std::lock_guard lock(s.sets);
          if (s.live.contains(*owner)) continue;  // that run's own sweep takes it
        }
        ::kill(pid, SIGKILL);
        ++thisPass;
      }
    }
    found += thisPass;
    if (thisPass == 0 || Clock::now() >= until) return found;
    // Killed ones die, and their children come here, shortly.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
}

pid_t watchdogPid() {
  return state().watchdog;
}

}  // namespace gpufuzz::strays
