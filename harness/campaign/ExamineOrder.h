// ExamineOrder.h: which failure waiting for a campaign's examiner it takes next. With
// --persistent one worker examines at a time and the others queue their failures for it
// (docs/campaigns.md, "Triage"); the order decides which causes a night confirms before its stop.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

namespace gpufuzz {

/// A queued failure as the order sees it.
struct WaitingFailure {
  std::string examinedAs;  // its settled cause, else its failure kind
  bool newSite = false;    // triage settled a cause no finding has yet
  bool variant = false;    // a known cause at an operation new to it
};

/// The rank of a waiting failure, lower first:
/// 0. a new crash site or verdict, of a cause no shrink has examined yet;
/// 1. a failure triage could not settle, of a kind no shrink has examined yet;
/// 2. a failure of a cause or kind a shrink examined before: a retry of a cause not confirmed,
///    or a hit once its cause is recorded;
/// 3. a variant: its cause is known, only its witness at its operation is not.
/// `examined`: the causes and kinds a shrink examined.
int examineRank(const WaitingFailure& w, const std::set<std::string>& examined);

/// The index of the first failure of the best rank in `waiting`, which is not empty.
std::size_t nextToExamine(const std::vector<WaitingFailure>& waiting,
                          const std::set<std::string>& examined);

}  // namespace gpufuzz
