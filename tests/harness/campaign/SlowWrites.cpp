// SlowWrites.cpp: an LD_PRELOAD library for campaign-kill-test. Every write(2) to a regular file
// under GPUFUZZ_SLOW_WRITES_DIR first appends the file's path as a line to
// GPUFUZZ_SLOW_WRITES_LOG, then waits GPUFUZZ_SLOW_WRITES_MS milliseconds: the test sees which
// file is being written and kills the campaign while that write is under way, where a file
// replaced in place would be half-written. Writes elsewhere (pipes, the work folder) pass at once.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

using WriteFn = ssize_t (*)(int, const void*, size_t);

/// Whether `fd` is a regular file under `dir`; its path in `path` then.
bool underDir(int fd, const char* dir, char* path, std::size_t size) {
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) return false;
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = ::readlink(link, path, size - 1);
  if (n <= 0) return false;
  path[n] = '\0';
  return std::strncmp(path, dir, std::strlen(dir)) == 0;
}

void announce(const char* log, const char* path) {
  const int fd = static_cast<int>(
      ::syscall(SYS_openat, AT_FDCWD, log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (fd < 0) return;
  char line[4200];
  const int n = std::snprintf(line, sizeof line, "%d %s\n", static_cast<int>(::getpid()), path);
  ::syscall(SYS_write, fd, line, static_cast<size_t>(n));
  ::syscall(SYS_close, fd);
}

}  // namespace

extern "C" ssize_t write(int fd, const void* buffer, size_t count) {
  static const WriteFn real = reinterpret_cast<WriteFn>(::dlsym(RTLD_NEXT, "write"));
  static const char* dir = std::getenv("GPUFUZZ_SLOW_WRITES_DIR");
  static const char* log = std::getenv("GPUFUZZ_SLOW_WRITES_LOG");
  static const long ms =
      std::getenv("GPUFUZZ_SLOW_WRITES_MS") ? std::atol(std::getenv("GPUFUZZ_SLOW_WRITES_MS")) : 0;
  char path[4096];
  if (dir != nullptr && log != nullptr && count > 0 && underDir(fd, dir, path, sizeof path)) {
    announce(log, path);
    const timespec wait{ms / 1000, (ms % 1000) * 1000000};
    ::nanosleep(&wait, nullptr);
  }
  return real(fd, buffer, count);
}
