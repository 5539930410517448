// CrashHandler.cpp: the frames of a fatal signal, written from inside the dying runner, and every
// thread's frames on request. The record's pieces and the stacks handler are the C++ client's
// (clients/cpp/gpufuzz/stacks.hpp): a target of the protocol answers as the runner does.
#include "harness/runner/CrashHandler.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "harness/protocol/CrashReport.h"

namespace gpufuzz {

namespace {

using namespace target::signal_safe;

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// Static: nothing is allocated once the signal came. The alternate stack lets a stack overflow
// be reported too.
char crashFile[4096];
alignas(16) char alternateStack[256 * 1024];

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

}  // namespace

void installStacksHandler() {
  // The target protocol's C++ client holds the handler: the runner answers as any target does.
  target::installStacksHandler();
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
