// Text.h: text matching that backends and the harness share: a device chosen by a word of its
// name (--device), a platform told by its vendor's name, each ignoring case.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace gpufuzz {

inline std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

/// Whether `haystack` contains `needle`, ignoring case.
inline bool containsIgnoringCase(std::string_view haystack, std::string_view needle) {
  return lowercase(haystack).find(lowercase(needle)) != std::string::npos;
}

}  // namespace gpufuzz
