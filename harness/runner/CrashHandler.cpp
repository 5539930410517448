// CrashHandler.cpp: the frames of a fatal signal, written from inside the dying runner.
#include "harness/runner/CrashHandler.h"

#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

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

void writeDecimalLine(int fd, const char* name, long value) {
  char digits[24];
  std::size_t count = 0;
  unsigned long v = value < 0 ? 0 : static_cast<unsigned long>(value);
  do {
    digits[count++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  char line[64];
  std::size_t n = 0;
  for (const char* c = name; *c != '\0' && n < 24; ++c)
    line[n++] = *c;
  line[n++] = ' ';
  while (count > 0)
    line[n++] = digits[--count];
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

void onFatalSignal(int sig, siginfo_t*, void* context) {
  const int saved = errno;
  const int fd = ::open(crashFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) {
    writeText(fd, kCrashFileHeader);
    writeText(fd, "\n");
    writeDecimalLine(fd, "signal", sig);
    if (const uintptr_t pc = programCounter(context)) writeHexLine(fd, "pc", pc);
    char exe[4096];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
      writeText(fd, "exe ");
      writeAll(fd, exe, static_cast<std::size_t>(n));
      writeText(fd, "\n");
    }
    void* frames[kMostFrames];
    const int count = ::backtrace(frames, kMostFrames);
    for (int i = 0; i < count; ++i)
      writeHexLine(fd, "frame", reinterpret_cast<uintptr_t>(frames[i]));
    writeText(fd, "maps\n");
    copyFile(fd, "/proc/self/maps");
    ::close(fd);
  }
  errno = saved;
  // SA_RESETHAND made the action the default again: a fault re-faults once the handler returns,
  // and a raised signal (abort) is delivered then, since it is blocked until the return.
  ::raise(sig);
}

}  // namespace

void installCrashHandler() {
  const char* file = std::getenv(kCrashFileVariable);
  if (file == nullptr || *file == '\0' || std::strlen(file) >= sizeof crashFile) return;
  std::strcpy(crashFile, file);
  // backtrace() loads libgcc's unwinder on its first call, which allocates: done here, not in
  // the handler.
  void* warm[2];
  ::backtrace(warm, 2);
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
