// ExamineOrder.cpp: the examiner's order over its queue.
#include "harness/campaign/ExamineOrder.h"

namespace gpufuzz {

int examineRank(const WaitingFailure& w, const std::set<std::string>& examined) {
  if (w.variant) return 3;
  if (examined.contains(w.examinedAs)) return 2;
  return w.newSite ? 0 : 1;
}

std::size_t nextToExamine(const std::vector<WaitingFailure>& waiting,
                          const std::set<std::string>& examined) {
  std::size_t best = 0;
  int bestRank = waiting.empty() ? 0 : examineRank(waiting.front(), examined);
  for (std::size_t i = 1; i < waiting.size() && bestRank > 0; ++i) {
    const int rank = examineRank(waiting[i], examined);
    if (rank < bestRank) {
      best = i;
      bestRank = rank;
    }
  }
  return best;
}

}  // namespace gpufuzz
