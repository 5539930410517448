// Events.h: the progress protocol between a runner (the child) and its supervisor. One event a
// line, each written with a single write(2) so the reader sees it the moment it happens:
//
//   start <operations>
//   begin <at> <op>          at: a 1-based ordinal, or "end" for the release of leftovers
//   done <at>
//   outcome <class> <at|-> <op|-> <detail...>
//   fail <at> <detail...>    the operation ended as its mark asked, or ran out for real
//                            (docs/failures.md); it had its begin, and the run goes on
//   skip <at>                the operation was not run: it uses a name a failed one never made
//   calls <made> <overlapped>
//                             the runtime calls the sequence made, and how many of them began
//                             while another thread of the process was inside a runtime call
//                             (docs/sequences.md, Threads on real runtimes); optional, before
//                             the outcome
//   fault <effect> [@<at>] <rule...>
//                             a fault-plan rule fired in an operation: its effect (hang, spin,
//                             crash, error, corrupt, leak, delay), the operation it fired in
//                             (without @: the one running now), and the rule as the plan cites
//                             it; the project's runner writes it before the effect, once per
//                             rule and operation, so a failure the plan planted names its rule
//                             even when the process says nothing after it
//
// A runner that stops producing events is stuck; one whose last event is `begin` is stuck in
// that operation.
//
// The events are the child's words, not the harness's: parseEvent() takes an operation's or an
// effect's name only as a model writes one ([a-z][a-z0-9_]*, since it goes into folder names),
// a count or ordinal only in decimal digits, and free text (a detail, a rule) under the rule for
// outside text (harness/base/OutsideText.h), so what it returns is valid UTF-8 whatever came.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "harness/base/RunOutcome.h"

namespace gpufuzz {

struct Event {
  enum class Kind : uint8_t { Start, Begin, Done, Outcome, Fault, Fail, Skip, Calls, Near, Reach };
  Kind kind = Kind::Start;
  uint32_t operations = 0;  // start
  At at;                    // begin, done, fail, skip
  std::string op;           // begin; fault: the effect
  RunOutcome outcome;       // outcome
  std::string rule;         // fault; near: the rule, as the plan cites it
  /// fault: the operation the rule fired in, when the event says (`@<at>`).
  std::optional<At> faultAt;
  std::string detail;       // fail: the call that failed and its error, for people
  uint64_t calls = 0;       // calls: runtime calls made
  uint64_t overlapped = 0;  // calls: of them, begun while another thread was inside one
  /// near: a set of the rule's `conditions` that held together at one call, bit c for
  /// condition c (the project's runner on a fault plan; docs/search.md). reach: `held` is the
  /// largest value condition `conditions` (1-based) saw its counter at, up to its threshold.
  uint64_t held = 0, conditions = 0;
};

std::string formatEvent(const Event& e);
/// Parses one line (without its newline); nullopt for anything that is not an event.
std::optional<Event> parseEvent(std::string_view line);

/// The order of target.md: `start` first; then, for each operation in turn, `begin K OP` and
/// `done K` or `fail K`, or `skip K` alone; then, once every operation is done, `begin end end` and
/// `done end` (optional); and `outcome` last, where `pass` needs every operation done; `fault` only
/// while an operation (or the release at the end) runs. Its class is one a child can see itself
/// (pass, error, invalid, mismatch, leak): hangs, spins, slowness and crashes are the harness's to
/// judge. A threaded sequence (sequences.md, Threads) has operations in flight together: each
/// ordinal begins once, after the `done` of every operation it waits for.
class EventOrder {
 public:
  /// `expectedOps`: the sequence's operations by kind name, when known (then `start` must count
  /// them and each `begin` name its operation). `waits`: for a threaded sequence, the 0-based
  /// operations each waits for (threadWaits); empty: one after another.
  explicit EventOrder(std::vector<std::string> expectedOps = {},
                      std::vector<std::vector<std::size_t>> waits = {});
  /// Empty when `e` may come now (and it is taken); otherwise why not, for people.
  std::string accept(const Event& e);
  /// The ordinals of the operations running now, lowest first.
  const std::set<uint32_t>& running() const { return running_; }

 private:
  std::string acceptBegin(const Event& e);
  std::string acceptSkip(const Event& e);
  /// Why `e` (a begin or a skip, `verb`) comes before an operation it waits for is done, or empty.
  std::string waitedFor(const Event& e, const char* verb) const;
  std::vector<std::string> expected_;
  std::vector<std::vector<std::size_t>> waits_;
  bool started_ = false, ended_ = false, endBegun_ = false, endDone_ = false, endRunning_ = false;
  uint32_t operations_ = 0, done_ = 0;
  std::set<uint32_t> running_;
  std::vector<bool> begun_, finished_;
};

/// Writes events to a file descriptor, unbuffered. A negative fd writes nothing.
class EventWriter {
 public:
  explicit EventWriter(int fd) : fd_(fd) {}
  void write(const Event& e) const;

 private:
  int fd_;
};

}  // namespace gpufuzz
