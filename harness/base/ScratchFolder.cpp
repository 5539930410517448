// ScratchFolder.cpp: the folder of a campaign's short-lived files.
#include "harness/base/ScratchFolder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace gpufuzz {

std::filesystem::path scratchFolder() {
  if (const char* tmp = std::getenv("TMPDIR"); tmp && *tmp) return tmp;
  // Looked at once: every run asks, for its crash and stacks files.
  static const char* const folder = [] {
    struct stat info {};
    const bool shm = ::stat("/dev/shm", &info) == 0 && S_ISDIR(info.st_mode) &&
                     ::access("/dev/shm", W_OK | X_OK) == 0;
    return shm ? "/dev/shm" : "/tmp";
  }();
  return folder;
}

}  // namespace gpufuzz
