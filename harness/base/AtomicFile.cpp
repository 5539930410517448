// AtomicFile.cpp: atomic replacement of files, whole appends, and the temporaries of killed
// writers.
#include "harness/base/AtomicFile.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gpufuzz {

namespace {

constexpr std::string_view kTemporaryMark = ".tmp.";

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path, int error) {
  throw WriteError("cannot write " + path.string() + ": " + what + std::strerror(error));
}

/// Writes all of `content` to `fd`; the errno of a failure, or 0.
int writeAll(int fd, const std::string& content) {
  std::size_t off = 0;
  while (off < content.size()) {
    const ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    off += static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace

void writeFileAtomically(const std::filesystem::path& path, const std::string& content) {
  static std::atomic<uint64_t> counter{0};
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail("cannot make its folder: ", path, ec.value());
  const auto tmp = dir / ("." + path.filename().string() + std::string(kTemporaryMark) +
                          std::to_string(::getpid()) + "." + std::to_string(counter++));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("", path, errno);
  int error = writeAll(fd, content);
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(tmp.c_str());
    fail("", path, error);
  }
  syncDirectory(dir);
}

void writeScratchFile(const std::filesystem::path& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) fail("", path, errno);
  int error = writeAll(fd, content);
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) fail("", path, error);
}

void appendFileWhole(const std::filesystem::path& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) fail("", path, errno);
  struct stat before {};
  int error = ::fstat(fd, &before) != 0 ? errno : 0;
  if (error == 0) error = writeAll(fd, content);
  if (error != 0 && before.st_size >= 0) {
    [[maybe_unused]] const int ignored = ::ftruncate(fd, before.st_size);
  }
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) fail("", path, error);
}

void syncDirectory(const std::filesystem::path& dir) {
  const int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    ::fsync(dirFd);
    ::close(dirFd);
  }
}

bool processAlive(long pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH);
}

std::size_t removeAbandonedTemporaries(const std::filesystem::path& dir) {
  std::size_t removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    // ".NAME.tmp.PID.N"
    const std::string name = entry.path().filename().string();
    const std::size_t mark = name.rfind(kTemporaryMark);
    if (!name.starts_with('.') || mark == std::string::npos) continue;
    const long pid = std::atol(name.c_str() + mark + kTemporaryMark.size());
    if (pid <= 0 || processAlive(pid)) continue;
    std::error_code ignored;
    if (std::filesystem::remove(entry.path(), ignored)) ++removed;
  }
  return removed;
}

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace gpufuzz
