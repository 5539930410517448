// InputFile.cpp: reading an input file whole, with errors for people.
#include "model/InputFile.h"

#include <algorithm>
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
