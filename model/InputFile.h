// InputFile.h: the whole text of an input file (a sequence, a model), or an InputError that
// names the file and says what it was to be: a directory, a missing or unreadable file.
#pragma once

#include <string>
#include <string_view>

namespace gpufuzz {

/// `what`: "sequence file", "model file".
std::string readInputFile(const std::string& path, std::string_view what);

}  // namespace gpufuzz
