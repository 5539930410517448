// Printers.h: readable values in failure messages of the model tests (gtest and RapidCheck).
#pragma once

#include <ostream>
#include <string>

#include "model/Operation.h"
#include "model/Outcome.h"
#include "model/Sequence.h"

namespace gpufuzz {

inline void PrintTo(const Operation& op, std::ostream* os) {
  *os << operationText(op);
}
inline void PrintTo(const Expectation& e, std::ostream* os) {
  *os << expectationText(e);
}
inline void PrintTo(const Sequence& s, std::ostream* os) {
  *os << "\n" << printSequence(s);
}
inline void showValue(const Sequence& s, std::ostream& os) {
  os << "\n" << printSequence(s);
}

}  // namespace gpufuzz
