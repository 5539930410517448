// TestSequence.h: `.seq` text parsed as the model tests read it, as a file named t.seq, so the
// errors they expect start with that name.
#pragma once

#include <string_view>

#include "model/Sequence.h"

namespace gpufuzz::testing {

/// `text` parsed as the file t.seq; parseSequence()'s InputError passes through.
inline Sequence parseTestSequence(std::string_view text) {
  return parseSequence(text, "t.seq");
}

}  // namespace gpufuzz::testing
