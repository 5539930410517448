// RunOutcome.cpp: an outcome in words, and the kind of failure it is.
#include "harness/base/RunOutcome.h"

namespace gpufuzz {

std::string outcomeText(const RunOutcome& o) {
  std::string text(outcomeClassName(o.cls));
  if (o.at) text += " at " + atText(*o.at) + " (" + o.op + ")";
  if (!o.detail.empty()) text += ": " + o.detail;
  return text;
}

std::string failureKind(const RunOutcome& o) {
  return std::string(outcomeClassName(o.cls)) + "/" + (o.fault.empty() ? o.op : "fault " + o.fault);
}

}  // namespace gpufuzz
