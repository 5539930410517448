// InputFile.cpp: reading an input file whole, with errors for people.
#include "model/InputFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/InputError.h"

namespace gpufuzz {

std::string readInputFile(const std::string& path, std::string_view what) {
  // POSIX calls, not a stream: a fork server's child reads its sequence here, and the stream's
  // locale and buffer setup cost it more page faults than the read itself.
  const std::string kind(what);
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    throw InputError(path + ": is a directory, not a " + kind);
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path + ": cannot open the " + kind + ": " + std::strerror(errno));
  std::string text;
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      text.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      ::close(fd);
      if (n < 0) throw InputError(path + ": cannot read the " + kind);
      return text;
    }
  }
}

std::vector<Token> tokenize(std::string_view text) {
  std::vector<Token> tokens;
  std::size_t begin = text.find_first_not_of(kBlank);
  while (begin != std::string_view::npos) {
    const std::size_t end = std::min(text.find_first_of(kBlank, begin), text.size());
    tokens.push_back({text.substr(begin, end - begin), static_cast<int>(begin) + 1});
    begin = text.find_first_not_of(kBlank, end);
  }
  return tokens;
}

std::string inQuotes(std::string_view s) {
  return "'" + std::string(s) + "'";
}

}  // namespace gpufuzz
