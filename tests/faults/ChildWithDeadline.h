// ChildWithDeadline.h: runs part of a test in a forked child under a hard deadline and reports
// how it ended and what CPU it used, so a test can watch a hang, a spin or a crash without ever
// hanging or crashing the suite itself.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

namespace gpufuzz::test {

struct ChildLimits {
  /// The child is SIGKILLed if still running this long after the fork. Short, so that a test of
  /// a hang costs about this much and no more.
  std::chrono::milliseconds deadline{1500};
  /// CPU use is measured from this point to the deadline, after the child has set itself up.
  std::chrono::milliseconds windowStart{300};
};

struct ChildReport {
  bool exited = false;  // returned from its body or called exit
  int exitCode = -1;
  bool signaled = false;  // died of a signal of its own (not the deadline's SIGKILL)
  int signal = 0;
  bool killedAtDeadline = false;  // was still running at the deadline
  /// The child's scheduler state just before the deadline kill: 'S' asleep, 'R' running.
  char stateAtDeadline = '?';
  /// (utime + stime) / wall time over [windowStart, deadline]; set only when killedAtDeadline.
  double cpuShare = 0;
  /// Time spent runnable but waiting for a CPU / wall time, over the same window: what other
  /// processes on a loaded machine kept the child from burning. 0 where the kernel does not say.
  double waitShare = 0;
  std::chrono::milliseconds elapsed{};
  /// Everything the child wrote to stdout and stderr.
  std::string output;
};

/// Collects a child's own checks; each failure is described on stderr, which the parent reports.
class ChildChecks {
 public:
  void expect(bool ok, std::string_view what) {
    if (ok) return;
    ++failed_;
    std::fprintf(stderr, "child check failed: %.*s\n", static_cast<int>(what.size()), what.data());
  }
  /// The child's exit status: 0 when every check held.
  int status() const { return failed_ == 0 ? 0 : 1; }

 private:
  int failed_ = 0;
};

namespace detail {

struct ProcSample {
  char state = '?';
  double cpuSeconds = 0;
  double waitSeconds = 0;
};

// /proc/PID/stat: "pid (comm) state ... utime stime ..."; comm may hold spaces or parentheses, so
// fields are counted from the last ')'. utime and stime are fields 14 and 15.
inline std::optional<ProcSample> sampleProc(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return std::nullopt;
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 1));
  ProcSample sample;
  fields >> sample.state;
  std::string skip;
  for (int field = 4; field <= 13; ++field) {
    fields >> skip;
  }
  unsigned long long utime = 0;
  unsigned long long stime = 0;
  fields >> utime >> stime;
  if (!fields) return std::nullopt;
  sample.cpuSeconds =
      static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  // /proc/PID/schedstat: "time on CPU, time waiting on a runqueue (ns), timeslices".
  std::ifstream sched("/proc/" + std::to_string(pid) + "/schedstat");
  unsigned long long onCpuNs = 0;
  unsigned long long waitNs = 0;
  if (sched >> onCpuNs >> waitNs) sample.waitSeconds = static_cast<double>(waitNs) / 1e9;
  return sample;
}

inline void drain(int fd, std::string& into) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return;  // EOF, or nothing more for now
  }
}

}  // namespace detail

/// Forks; the child runs `body` (its return value is the exit status; an escaping exception is
/// reported and exits 125) and never returns into the test framework. The parent polls until the
/// child ends or the deadline passes, then kills it.
inline ChildReport runInChild(const std::function<int()>& body, ChildLimits limits = {}) {
  using Clock = std::chrono::steady_clock;
  ChildReport report;
  int pipeFds[2];
  if (::pipe(pipeFds) != 0) {
    report.output = "pipe failed";
    return report;
  }
  std::fflush(nullptr);  // or the child would repeat whatever the parent had buffered
  const Clock::time_point start = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    report.output = "fork failed";
    return report;
  }
  if (pid == 0) {
    ::close(pipeFds[0]);
    ::dup2(pipeFds[1], STDOUT_FILENO);
    ::dup2(pipeFds[1], STDERR_FILENO);
    ::close(pipeFds[1]);
    int status = 125;
    try {
      status = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "uncaught exception: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "uncaught exception\n");
    }
    std::fflush(nullptr);
    ::_exit(status);
  }

  ::close(pipeFds[1]);
  ::fcntl(pipeFds[0], F_SETFL, ::fcntl(pipeFds[0], F_GETFL) | O_NONBLOCK);
  std::optional<detail::ProcSample> windowOpen;
  Clock::time_point windowOpenedAt;
  int status = 0;
  for (;;) {
    detail::drain(pipeFds[0], report.output);
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    const Clock::time_point now = Clock::now();
    if (!windowOpen && now - start >= limits.windowStart) {
      windowOpen = detail::sampleProc(pid);
      windowOpenedAt = now;
    }
    if (now - start >= limits.deadline) {
      const std::optional<detail::ProcSample> windowClose = detail::sampleProc(pid);
      if (windowOpen && windowClose) {
        const std::chrono::duration<double> wall = now - windowOpenedAt;
        report.cpuShare = (windowClose->cpuSeconds - windowOpen->cpuSeconds) / wall.count();
        report.waitShare = (windowClose->waitSeconds - windowOpen->waitSeconds) / wall.count();
        report.stateAtDeadline = windowClose->state;
      }
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      report.killedAtDeadline = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  report.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  detail::drain(pipeFds[0], report.output);
  ::close(pipeFds[0]);
  if (!report.killedAtDeadline) {
    report.exited = WIFEXITED(status);
    report.exitCode = report.exited ? WEXITSTATUS(status) : -1;
    report.signaled = WIFSIGNALED(status);
    report.signal = report.signaled ? WTERMSIG(status) : 0;
  }
  return report;
}

}  // namespace gpufuzz::test
