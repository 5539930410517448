// Text.h: English for people, as reports and facts write it: a count with its noun, and a list
// joined by a separator.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gpufuzz {

/// "1 experiment", "3 experiments".
inline std::string plural(std::size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

/// The parts with `separator` between each two.
inline std::string joined(const std::vector<std::string>& parts,
                          const std::string& separator = ", ") {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i)
    out += (i == 0 ? "" : separator) + parts[i];
  return out;
}

}  // namespace gpufuzz
