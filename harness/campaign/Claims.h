// Claims.h: with --persistent, which worker examines each cause, and the failures deferred to its
// verdict (docs/campaigns.md, "Triage"). A persistent process's failure whose cause no finding
// has yet is claimed by the first worker that meets it; another worker's failure of that cause
// is deferred, a count by class, and that worker goes on fuzzing. The verdict settles them: hits
// of the cause once it is recorded. A claim ended without one leaves them waiting, unclaimed,
// for the next failure of their cause; what still waits when the campaign ends is settled last.
//
// Not thread-safe: Triage calls it under its own lock (Triage.h).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "model/Outcome.h"

namespace gpufuzz {

/// Counts of failures by class (OutcomeClass as the index).
using ClassCounts = std::array<uint64_t, kOutcomeClassCount>;

/// The known cause a failure of a cause counts as, or empty while none is known.
using KnownAs = std::function<std::string(const std::string& cause)>;

/// Failures deferred to a cause now known: `hits` of the cause `as`.
struct DeferredHits {
  std::string as;
  uint64_t hits = 0;
};

/// What was still deferred when the campaign ended: hits of causes known by then, and the rest
/// unexamined, by class.
struct LeftDeferred {
  std::vector<DeferredHits> hits;
  ClassCounts unexamined{};
};

class Claims {
 public:
  using Owner = std::thread::id;

  /// `owner` claims `cause` and examines it: true when no one else holds it (or `owner` does).
  /// False when another owner examines it; then a failure of class `cls` is deferred to it.
  bool claimOrDefer(const std::string& cause, Owner owner, OutcomeClass cls);

  /// The causes `owner` holds.
  std::vector<std::string> heldBy(Owner owner) const;

  /// Hands every claim of `from` to `to` (a failure queued for another examiner takes its
  /// worker's claims with it); returns their causes.
  std::vector<std::string> handOver(Owner from, Owner to);

  /// Ends the claims that `ends(cause, owner)` picks. Those whose cause `knownAs` names settle
  /// their deferred failures as its hits, returned. The others' stay deferred, unclaimed.
  std::vector<DeferredHits> end(const std::function<bool(const std::string&, Owner)>& ends,
                                const KnownAs& knownAs);

  /// Takes the failures deferred to `cause`, by class.
  ClassCounts take(const std::string& cause);

  /// Takes every failure still deferred: hits of a cause `knownAs` names, else unexamined.
  LeftDeferred takeLeft(const KnownAs& knownAs);

  /// The failures deferred now, whether their cause is claimed or not.
  uint64_t waiting() const;

 private:
  std::map<std::string, Owner> examining_;
  std::map<std::string, ClassCounts> deferred_;
};

/// The sum of `counts`.
uint64_t total(const ClassCounts& counts);

}  // namespace gpufuzz
