// InputFile.cpp: reading an input file whole, with errors for people.
#include "model/InputFile.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "renderer/InputError.h"

namespace gpufuzz {

std::string readInputFile(const std::string& path, std::string_view what) {
  const std::string kind(what);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(path + ": is a directory, not a " + kind);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the " + kind + ": " + std::strerror(errno));
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw InputError(path + ": cannot read the " + kind);
  return text;
}

}  // namespace gpufuzz
