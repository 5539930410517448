// SupervisedChild.cpp: process group, parent-death signal, signals and descriptors of a child.
#include "harness/protocol/SupervisedChild.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>

namespace gpufuzz {

int becomeSupervisedChild(pid_t parent, pid_t tracer) {
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
  // children itself (SIGKILL) and keeps what they found. A child ended by the job's SIGTERM
  // first would read as a crash of its own, or as a failure under shrink that did not reproduce.
  struct sigaction ignored {};
  ignored.sa_handler = SIG_IGN;
  ::sigaction(SIGTERM, &ignored, nullptr);
  ::sigaction(SIGINT, &ignored, nullptr);
  return 0;
}

int placeOutputAndEvents(int outputFd, int eventsFd) {
  // Out of the way first, so no dup2 below can overwrite one of them. The temporaries are
  // O_CLOEXEC; dup2 clears the flag on the descriptors the child keeps.
  const int output = ::fcntl(outputFd, F_DUPFD_CLOEXEC, 10);
  const int events = eventsFd >= 0 ? ::fcntl(eventsFd, F_DUPFD_CLOEXEC, 10) : -1;
  if (output < 0 || (eventsFd >= 0 && events < 0)) return errno;
  if (::dup2(output, STDOUT_FILENO) < 0 || ::dup2(output, STDERR_FILENO) < 0) return errno;
  if (events >= 0 && ::dup2(events, kChildEventsFd) < 0) return errno;
  return 0;
}

}  // namespace gpufuzz
