// gpufuzz/stacks.hpp: every thread's native frames when the harness asks, written by the process
// itself from a signal handler. Header-only, POSIX and glibc's backtrace(); it lives beside
// target.hpp, which includes it, so a target built outside the project gets it with the client.
// The project's runner answers with the same code (harness/runner/CrashHandler.cpp).
//
// The harness names a file in kStacksFileVariable. installStacksHandler() takes kStacksSignal and
// writes "pid N" there: this process answers. For a stuck or late process the harness sends the
// signal. The thread that takes it writes the record to the file's name with kStacksPartSuffix,
// signals every other thread that does not block the signal, waits for them a while, and renames
// the record to the file's name with kStacksTakenSuffix. The record is text, one record a line:
//   gpufuzz stacks 1
//   exe PATH
//   thread TID NAME   then that thread's lines:
//   handler           the thread runs the target's code for the client library: an operation's
//                     handler, a release, start() or leaks(). The harness takes such a thread
//                     for the stuck one; the client's threads that wait for their turn are not
//   pc 0xADDR         where the signal came (the signal context's program counter)
//   frame 0xADDR      each return address the unwinder found, innermost first (the handler's
//                     own frames come before the one at `pc`)
//   maps              then /proc/self/maps as it was, to the end of the file: which module holds
//                     each address, for symbolising after the process is gone
// Each thread unwinds its own stack inside the handler: no debugger attaches. On the GPU machine
// cuda-gdb 13.0 crashed attaching to a spinning runner, and the spin was left without frames.
// Everything after the signal is async-signal-safe: open, read, write, rename, and backtrace(),
// whose unwinder is loaded at installation so that it allocates nothing then.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if __has_include(<execinfo.h>)
#include <execinfo.h>
#define GPUFUZZ_STACKS_BACKTRACE 1
#else
#define GPUFUZZ_STACKS_BACKTRACE 0
#endif

namespace gpufuzz::target {

/// The environment variable that names the stacks file.
inline constexpr const char* kStacksFileVariable = "GPUFUZZ_STACKS_FILE";
/// The first line of a stacks record.
inline constexpr const char* kStacksFileHeader = "gpufuzz stacks 1";
/// Where a stacks record is written, after the stacks file's name, until it is complete.
inline constexpr const char* kStacksPartSuffix = ".part";
/// What a stacks record is renamed to, after the stacks file's name.
inline constexpr const char* kStacksTakenSuffix = ".taken";
/// The signal that asks for them. Its default action is to ignore it: a process without the
/// handler goes on as it was.
inline constexpr int kStacksSignal = SIGURG;

/// Pieces of a record, each safe to call from a signal handler: no allocation, no stdio, no lock.
namespace signal_safe {

inline constexpr int kMostFrames = 128;

inline void writeAll(int fd, const char* text, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, text, size);
    if (n <= 0) return;
    text += n;
    size -= static_cast<std::size_t>(n);
  }
}

inline void writeText(int fd, const char* text) {
  writeAll(fd, text, std::strlen(text));
}

/// `value` in decimal at `out`, which has room for 20 digits; how many were written.
inline std::size_t formatDecimal(char* out, unsigned long value) {
  char digits[24];
  std::size_t count = 0;
  do {
    digits[count++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  for (std::size_t i = 0; i < count; ++i)
    out[i] = digits[count - 1 - i];
  return count;
}

/// "NAME 0x1f2e\n", formatted by hand (snprintf is not async-signal-safe).
inline void writeHexLine(int fd, const char* name, std::uintptr_t value) {
  char line[64];
  std::size_t n = 0;
  for (const char* c = name; *c != '\0' && n < 24; ++c)
    line[n++] = *c;
  line[n++] = ' ';
  line[n++] = '0';
  line[n++] = 'x';
  char digits[sizeof(std::uintptr_t) * 2];
  std::size_t count = 0;
  do {
    digits[count++] = "0123456789abcdef"[value & 0xf];
    value >>= 4;
  } while (value != 0);
  while (count > 0)
    line[n++] = digits[--count];
  line[n++] = '\n';
  writeAll(fd, line, n);
}

/// "NAME 1234\n"; a negative value is written as 0.
inline void writeDecimalLine(int fd, const char* name, long value) {
  char line[64];
  std::size_t n = 0;
  for (const char* c = name; *c != '\0' && n < 24; ++c)
    line[n++] = *c;
  line[n++] = ' ';
  n += formatDecimal(line + n, value < 0 ? 0 : static_cast<unsigned long>(value));
  line[n++] = '\n';
  writeAll(fd, line, n);
}

/// The program counter of a signal's context; 0 when unknown.
inline std::uintptr_t programCounter(const void* context) {
  if (context == nullptr) return 0;
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  return static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<std::uintptr_t>(uc->uc_mcontext.pc);
#else
  (void)uc;
  return 0;
#endif
}

/// Appends the file at `path` to `out`.
inline void copyFile(int out, const char* path) {
  const int in = ::open(path, O_RDONLY | O_CLOEXEC);
  if (in < 0) return;
  char buffer[4096];
  for (ssize_t n; (n = ::read(in, buffer, sizeof buffer)) > 0;)
    writeAll(out, buffer, static_cast<std::size_t>(n));
  ::close(in);
}

/// "exe PATH": the process's own executable, for telling its frames from the libraries'.
inline void writeExe(int fd) {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    writeText(fd, "exe ");
    writeAll(fd, exe, static_cast<std::size_t>(n));
    writeText(fd, "\n");
  }
}

/// "maps", then the process's memory map, which the harness symbolises the frames from.
inline void writeMaps(int fd) {
  writeText(fd, "maps\n");
  copyFile(fd, "/proc/self/maps");
}

/// The calling thread's frames: where the signal came (`pc`), then every return address.
struct Frames {
  std::uintptr_t pc = 0;
  void* addresses[kMostFrames];
  int count = 0;
  explicit Frames(const void* context) : pc(programCounter(context)) {
#if GPUFUZZ_STACKS_BACKTRACE
    count = ::backtrace(addresses, kMostFrames);
#endif
  }
  void write(int fd) const {
    if (pc != 0) writeHexLine(fd, "pc", pc);
    for (int i = 0; i < count; ++i)
      writeHexLine(fd, "frame", reinterpret_cast<std::uintptr_t>(addresses[i]));
  }
};

/// Backtrace() loads libgcc's unwinder on its first call, which allocates: done before a signal
/// can come, not in a handler. Once per process: a fork inherits the loaded unwinder, and a
/// fork server's child that walked its stack again would fault in the unwinder's pages for it.
inline void warmUnwinder() {
#if GPUFUZZ_STACKS_BACKTRACE
  static std::atomic<bool> warm{false};
  if (warm.exchange(true)) return;
  void* frames[2];
  ::backtrace(frames, 2);
#endif
}

inline long threadId() {
  return ::syscall(SYS_gettid);
}

}  // namespace signal_safe

namespace detail {

// The stacks handler's state. The thread that takes the process's signal leads: it signals the
// others, which add their frames under a spin lock, and ends the record. Static: nothing is
// allocated once the signal came.
inline char stacksFile[4096];
inline char stacksPart[4096 + 16];
inline char stacksTaken[4096 + 16];
inline std::atomic<int> stacksCollecting{0};
inline std::atomic<int> stacksWriting{0};
inline std::atomic<int> stacksAnswered{0};
inline std::atomic<int> stacksFd{-1};
inline std::atomic<bool> stacksInstalled{false};
inline constexpr int kMostThreads = 512;
/// How long the leader waits for the other threads: one stuck in the kernel never answers.
inline constexpr long kAnswerWaitMs = 500;

/// The threads that run the target's code now, by thread id (0: a free slot). A table, not a
/// thread_local: a thread's first touch of a library's thread_local may allocate, and the handler
/// must not.
inline constexpr int kMostHandlerThreads = 64;
inline std::atomic<long> handlerThreads[kMostHandlerThreads];

inline bool runsHandler(long tid) {
  for (const std::atomic<long>& slot : handlerThreads) {
    if (slot.load(std::memory_order_relaxed) == tid) return true;
  }
  return false;
}

inline void pauseMs(long ms) {
  timespec t{ms / 1000, (ms % 1000) * 1000000};
  ::nanosleep(&t, nullptr);
}

/// The spin lock over the record: one thread writes to it at a time.
inline void lockWriting() {
  for (int expected = 0;
       !stacksWriting.compare_exchange_weak(expected, 1, std::memory_order_acquire); expected = 0)
    pauseMs(1);
}

inline void unlockWriting() {
  stacksWriting.store(0, std::memory_order_release);
}

/// Whether thread `tid` blocks kStacksSignal, by its SigBlk line in /proc.
inline bool blocksStacksSignal(long tid) {
  char path[64] = "/proc/self/task/";
  std::size_t n = std::strlen(path);
  n += signal_safe::formatDecimal(path + n, static_cast<unsigned long>(tid));
  std::memcpy(path + n, "/status", 8);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // gone
  char text[4096];
  const ssize_t got = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (got <= 0) return true;
  text[got] = '\0';
  const char* line = std::strstr(text, "SigBlk:");
  if (line == nullptr) return false;
  line += 7;
  while (*line == ' ' || *line == '\t')
    ++line;
  const char* end = line;
  while ((*end >= '0' && *end <= '9') || ((*end | 0x20) >= 'a' && (*end | 0x20) <= 'f'))
    ++end;
  // The mask is hexadecimal, signal 1 in the lowest bit of the last digit.
  const int bit = kStacksSignal - 1;
  const char* digit = end - 1 - bit / 4;
  if (digit < line) return false;
  const int value = *digit <= '9' ? *digit - '0' : (*digit | 0x20) - 'a' + 10;
  return (value >> (bit % 4) & 1) != 0;
}

/// Signals every other thread that takes kStacksSignal; how many were signalled.
inline int signalOtherThreads() {
  const int dir = ::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  const long self = signal_safe::threadId();
  const long pid = ::getpid();
  int signalled = 0;
  alignas(8) char buffer[4096];
  for (long n; (n = ::syscall(SYS_getdents64, dir, buffer, sizeof buffer)) > 0;) {
    for (long at = 0; at < n;) {
      // struct linux_dirent64: inode, offset, record length, type, name.
      unsigned short length = 0;
      std::memcpy(&length, buffer + at + 16, sizeof length);
      const char* name = buffer + at + 19;
      at += length;
      long tid = 0;
      for (const char* c = name; *c >= '0' && *c <= '9'; ++c)
        tid = tid * 10 + (*c - '0');
      if (tid <= 0 || tid == self || signalled >= kMostThreads || blocksStacksSignal(tid)) continue;
      if (::syscall(SYS_tgkill, pid, tid, kStacksSignal) == 0) ++signalled;
    }
  }
  ::close(dir);
  return signalled;
}

/// "thread TID NAME", "handler" when it runs one, then the calling thread's frames, under the
/// lock.
inline void writeOwnStacks(const void* context) {
  using namespace signal_safe;
  const Frames frames(context);
  const long tid = threadId();
  char name[32] = {};
  const int comm = ::open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC);
  if (comm >= 0) {
    const ssize_t n = ::read(comm, name, sizeof name - 1);
    if (n > 0) name[n] = '\0';
    ::close(comm);
  }
  for (char& c : name) {
    if (c == '\n') c = '\0';
  }
  lockWriting();
  if (const int fd = stacksFd.load(); fd >= 0) {
    writeText(fd, "thread ");
    char digits[24];
    writeAll(fd, digits, formatDecimal(digits, static_cast<unsigned long>(tid)));
    writeText(fd, " ");
    writeText(fd, name);
    writeText(fd, "\n");
    if (runsHandler(tid)) writeText(fd, "handler\n");
    frames.write(fd);
  }
  unlockWriting();
}

inline void onStacksSignal(int, siginfo_t* info, void* context) {
  using namespace signal_safe;
  const int saved = errno;
  // Signalled by a thread of this process: the leader's request, even when it came so late that
  // the leader is done. Only the harness's signal starts a record.
  const bool fromLeader =
      info != nullptr && info->si_code == SI_TKILL && info->si_pid == ::getpid();
  int idle = 0;
  if (fromLeader || !stacksCollecting.compare_exchange_strong(idle, 1)) {
    writeOwnStacks(context);
    stacksAnswered.fetch_add(1);
    errno = saved;
    return;
  }
  const int fd = ::open(stacksPart, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) {
    writeText(fd, kStacksFileHeader);
    writeText(fd, "\n");
    writeExe(fd);
    stacksAnswered.store(0);
    stacksFd.store(fd);
    writeOwnStacks(context);
    const int signalled = signalOtherThreads();
    for (long waited = 0; stacksAnswered.load() < signalled && waited < kAnswerWaitMs; ++waited)
      pauseMs(1);
    lockWriting();
    stacksFd.store(-1);  // a thread that answers late writes nothing
    unlockWriting();
    writeMaps(fd);
    ::close(fd);
    ::rename(stacksPart, stacksTaken);
  }
  stacksCollecting.store(0);
  errno = saved;
}

}  // namespace detail

/// Installs the handler of kStacksSignal when kStacksFileVariable is set, then writes "pid N" to
/// that file to say so; does nothing otherwise. Called in the process that runs the sequence (a
/// fork server's fork resets every signal), before the first operation. target::main() does it.
inline void installStacksHandler() {
  using namespace detail;
  const char* file = std::getenv(kStacksFileVariable);
  if (file == nullptr || *file == '\0' || std::strlen(file) >= sizeof stacksFile) return;
  std::strcpy(stacksFile, file);
  std::strcpy(stacksPart, file);
  std::strcat(stacksPart, kStacksPartSuffix);
  std::strcpy(stacksTaken, file);
  std::strcat(stacksTaken, kStacksTakenSuffix);
  signal_safe::warmUnwinder();
  struct sigaction action {};
  action.sa_sigaction = onStacksSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  ::sigemptyset(&action.sa_mask);
  if (::sigaction(kStacksSignal, &action, nullptr) != 0) return;
  stacksInstalled.store(true);
  // The file says this process answers, and which process it is: a wrapper such as
  // compute-sanitizer may stand between it and the harness.
  const int fd = ::open(stacksFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) {
    signal_safe::writeDecimalLine(fd, "pid", ::getpid());
    ::close(fd);
  }
}

/// While it lives, the calling thread counts as running the target's code: its frames in a stacks
/// record say `handler`. The client library holds one around every call into the target. Nothing
/// is marked until the stacks handler is installed, so a run without it pays no system call.
class HandlerScope {
 public:
  HandlerScope() {
    if (!detail::stacksInstalled.load(std::memory_order_relaxed)) return;
    const long tid = signal_safe::threadId();
    for (int i = 0; i < detail::kMostHandlerThreads; ++i) {
      long expected = 0;
      if (detail::handlerThreads[i].compare_exchange_strong(expected, tid)) {
        slot_ = i;
        return;
      }
    }
  }
  ~HandlerScope() {
    if (slot_ >= 0) detail::handlerThreads[slot_].store(0);
  }
  HandlerScope(const HandlerScope&) = delete;
  HandlerScope& operator=(const HandlerScope&) = delete;

 private:
  int slot_ = -1;
};

}  // namespace gpufuzz::target
