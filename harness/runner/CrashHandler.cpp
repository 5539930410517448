// CrashHandler.cpp: the frames of a fatal signal, written from inside the dying runner, and every
// thread's frames on request.
#include "harness/runner/CrashHandler.h"

#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
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

#include "harness/protocol/CrashReport.h"

namespace gpufuzz {

namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr int kMostFrames = 128;

// Static: nothing is allocated once the signal came. The alternate stack lets a stack overflow
// be reported too.
char crashFile[4096];
alignas(16) char alternateStack[256 * 1024];

void writeAll(int fd, const char* text, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, text, size);
    if (n <= 0) return;
    text += n;
    size -= static_cast<std::size_t>(n);
  }
}

void writeText(int fd, const char* text) {
  writeAll(fd, text, std::strlen(text));
}

/// "NAME 0x1f2e\n", formatted by hand (snprintf is not async-signal-safe).
void writeHexLine(int fd, const char* name, uintptr_t value) {
  char line[64];
  std::size_t n = 0;
  for (const char* c = name; *c != '\0' && n < 24; ++c)
    line[n++] = *c;
  line[n++] = ' ';
  line[n++] = '0';
  line[n++] = 'x';
  char digits[sizeof(uintptr_t) * 2];
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

/// `value` in decimal at `out`, which has room for 20 digits; how many were written.
std::size_t formatDecimal(char* out, unsigned long value) {
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

void writeDecimalLine(int fd, const char* name, long value) {
  char line[64];
  std::size_t n = 0;
  for (const char* c = name; *c != '\0' && n < 24; ++c)
    line[n++] = *c;
  line[n++] = ' ';
  n += formatDecimal(line + n, value < 0 ? 0 : static_cast<unsigned long>(value));
  line[n++] = '\n';
  writeAll(fd, line, n);
}

uintptr_t programCounter(const void* context) {
  if (context == nullptr) return 0;
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.pc);
#else
  (void)uc;
  return 0;
#endif
}

void copyFile(int out, const char* path) {
  const int in = ::open(path, O_RDONLY | O_CLOEXEC);
  if (in < 0) return;
  char buffer[4096];
  for (ssize_t n; (n = ::read(in, buffer, sizeof buffer)) > 0;)
    writeAll(out, buffer, static_cast<std::size_t>(n));
  ::close(in);
}

void writeExe(int fd) {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    writeText(fd, "exe ");
    writeAll(fd, exe, static_cast<std::size_t>(n));
    writeText(fd, "\n");
  }
}

/// The calling thread's frames: where the signal came (`pc`), then every return address.
struct Frames {
  uintptr_t pc = 0;
  void* addresses[kMostFrames];
  int count = 0;
  explicit Frames(const void* context)
      : pc(programCounter(context)), count(::backtrace(addresses, kMostFrames)) {}
  void write(int fd) const {
    if (pc != 0) writeHexLine(fd, "pc", pc);
    for (int i = 0; i < count; ++i)
      writeHexLine(fd, "frame", reinterpret_cast<uintptr_t>(addresses[i]));
  }
};

void writeMaps(int fd) {
  writeText(fd, "maps\n");
  copyFile(fd, "/proc/self/maps");
}

void onFatalSignal(int sig, siginfo_t*, void* context) {
  const int saved = errno;
  const int fd = ::open(crashFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) {
    writeText(fd, kCrashFileHeader);
    writeText(fd, "\n");
    writeDecimalLine(fd, "signal", sig);
    writeExe(fd);
    Frames(context).write(fd);
    writeMaps(fd);
    ::close(fd);
  }
  errno = saved;
  // SA_RESETHAND made the action the default again: a fault re-faults once the handler returns,
  // and a raised signal (abort) is delivered then, since it is blocked until the return.
  ::raise(sig);
}

// The stacks handler's state. The thread that takes the process's signal leads: it signals the
// others, which add their frames under a spin lock, and ends the record.
char stacksFile[4096];
char stacksPart[4096 + 16];
char stacksTaken[4096 + 16];
std::atomic<int> collecting{0};
std::atomic<int> writing{0};
std::atomic<int> answered{0};
std::atomic<int> stacksFd{-1};
constexpr int kMostThreads = 512;
/// How long the leader waits for the other threads: one stuck in the kernel never answers.
constexpr long kAnswerWaitMs = 500;

void pauseMs(long ms) {
  timespec t{ms / 1000, (ms % 1000) * 1000000};
  ::nanosleep(&t, nullptr);
}

/// The spin lock over the record: one thread writes to it at a time.
void lockWriting() {
  for (int expected = 0; !writing.compare_exchange_weak(expected, 1, std::memory_order_acquire);
       expected = 0)
    pauseMs(1);
}

void unlockWriting() {
  writing.store(0, std::memory_order_release);
}

long threadId() {
  return ::syscall(SYS_gettid);
}

/// Whether thread `tid` blocks kStacksSignal, by its SigBlk line in /proc.
bool blocksStacksSignal(long tid) {
  char path[64] = "/proc/self/task/";
  std::size_t n = std::strlen(path);
  n += formatDecimal(path + n, static_cast<unsigned long>(tid));
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
int signalOtherThreads() {
  const int dir = ::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  const long self = threadId();
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

/// "thread TID NAME", then the calling thread's frames, under the lock.
void writeOwnStacks(const void* context) {
  const Frames frames(context);
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
    char tid[24];
    writeAll(fd, tid, formatDecimal(tid, static_cast<unsigned long>(threadId())));
    writeText(fd, " ");
    writeText(fd, name);
    writeText(fd, "\n");
    frames.write(fd);
  }
  unlockWriting();
}

void onStacksSignal(int, siginfo_t* info, void* context) {
  const int saved = errno;
  // Signalled by a thread of this process: the leader's request, even when it came so late that
  // the leader is done. Only the supervisor's signal starts a record.
  const bool fromLeader =
      info != nullptr && info->si_code == SI_TKILL && info->si_pid == ::getpid();
  int idle = 0;
  if (fromLeader || !collecting.compare_exchange_strong(idle, 1)) {
    writeOwnStacks(context);
    answered.fetch_add(1);
    errno = saved;
    return;
  }
  const int fd = ::open(stacksPart, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) {
    writeText(fd, kStacksFileHeader);
    writeText(fd, "\n");
    writeExe(fd);
    answered.store(0);
    stacksFd.store(fd);
    writeOwnStacks(context);
    const int signalled = signalOtherThreads();
    for (long waited = 0; answered.load() < signalled && waited < kAnswerWaitMs; ++waited)
      pauseMs(1);
    lockWriting();
    stacksFd.store(-1);  // a thread that answers late writes nothing
    unlockWriting();
    writeMaps(fd);
    ::close(fd);
    ::rename(stacksPart, stacksTaken);
  }
  collecting.store(0);
  errno = saved;
}

/// Backtrace() loads libgcc's unwinder on its first call, which allocates: done before a signal
/// can come, not in a handler.
void warmUnwinder() {
  void* warm[2];
  ::backtrace(warm, 2);
}

}  // namespace

void installStacksHandler() {
  const char* file = std::getenv(kStacksFileVariable);
  if (file == nullptr || *file == '\0' || std::strlen(file) >= sizeof stacksFile) return;
  std::strcpy(stacksFile, file);
  std::strcpy(stacksPart, file);
  std::strcat(stacksPart, kStacksPartSuffix);
  std::strcpy(stacksTaken, file);
  std::strcat(stacksTaken, kStacksTakenSuffix);
  warmUnwinder();
  struct sigaction action {};
  action.sa_sigaction = onStacksSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  ::sigemptyset(&action.sa_mask);
  if (::sigaction(kStacksSignal, &action, nullptr) != 0) return;
  // The file says this process answers, and which process it is: a wrapper such as
  // compute-sanitizer may stand between it and its supervisor.
  const int fd = ::open(stacksFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) {
    writeDecimalLine(fd, "pid", ::getpid());
    ::close(fd);
  }
}

void installCrashHandler() {
  const char* file = std::getenv(kCrashFileVariable);
  if (file == nullptr || *file == '\0' || std::strlen(file) >= sizeof crashFile) return;
  std::strcpy(crashFile, file);
  warmUnwinder();
  stack_t stack{};
  stack.ss_sp = alternateStack;
  stack.ss_size = sizeof alternateStack;
  ::sigaltstack(&stack, nullptr);
  struct sigaction action {};
  action.sa_sigaction = onFatalSignal;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  ::sigemptyset(&action.sa_mask);
  for (const int sig : kFatalSignals)
    ::sigaction(sig, &action, nullptr);
}

}  // namespace gpufuzz
