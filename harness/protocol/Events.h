// Events.h: the progress protocol between a runner (the child) and its supervisor. One event a
// line, each written with a single write(2) so the reader sees it the moment it happens:
//
//   start <operations>
//   begin <at> <op>          at: a 1-based ordinal, or "end" for the release of leftovers
//   done <at>
//   outcome <class> <at|-> <op|-> <detail...>
//   fault <effect> <rule...>  a fault-plan rule fired in the operation running now: its effect
//                             (hang, spin, crash, error, corrupt, leak, delay) and the rule as
//                             the plan cites it; the project's runner writes it before the
//                             effect, once per rule and sequence, so a failure the plan planted
//                             names its rule even when the process says nothing after it
//
// A runner that stops producing events is stuck; one whose last event is `begin` is stuck in
// that operation.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/base/RunOutcome.h"

namespace gpufuzz {

struct Event {
  enum class Kind : uint8_t { Start, Begin, Done, Outcome, Fault };
  Kind kind = Kind::Start;
  uint32_t operations = 0;  // start
  At at;                    // begin, done
  std::string op;           // begin; fault: the effect
  RunOutcome outcome;       // outcome
  std::string rule;         // fault
};

std::string formatEvent(const Event& e);
/// Parses one line (without its newline); nullopt for anything that is not an event.
std::optional<Event> parseEvent(std::string_view line);

/// The order of target.md: `start` first; then, for each operation in turn, `begin K OP` and
/// `done K`; then, once every operation is done, `begin end end` and `done end` (optional); and
/// `outcome` last, where `pass` needs every operation done; `fault` only while an operation
/// (or the release at the end) runs. Its class is one a child can see
/// itself (pass, error, invalid, mismatch, leak): hangs, spins, slowness and crashes are the
/// harness's to judge.
class EventOrder {
 public:
  /// `expectedOps`: the sequence's operations by kind name, when known (then `start` must count
  /// them and each `begin` name its operation).
  explicit EventOrder(std::vector<std::string> expectedOps = {});
  /// Empty when `e` may come now (and it is taken); otherwise why not, for people.
  std::string accept(const Event& e);
  /// The ordinal of the operation running now, if any.
  std::optional<At> running() const { return running_; }

 private:
  std::vector<std::string> expected_;
  bool started_ = false, ended_ = false, endBegun_ = false, endDone_ = false;
  uint32_t operations_ = 0, done_ = 0;
  std::optional<At> running_;
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
