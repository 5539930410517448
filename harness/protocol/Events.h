// Events.h: the progress protocol between a runner (the child) and its supervisor. One event a
// line, each written with a single write(2) so the reader sees it the moment it happens:
//
//   start <operations>
//   begin <at> <op>          at: a 1-based ordinal, or "end" for the release of leftovers
//   done <at>
//   outcome <class> <at|-> <op|-> <detail...>
//
// A runner that stops producing events is stuck; one whose last event is `begin` is stuck in
// that operation.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "harness/base/RunOutcome.h"

namespace gpufuzz {

struct Event {
  enum class Kind : uint8_t { Start, Begin, Done, Outcome };
  Kind kind = Kind::Start;
  uint32_t operations = 0;  // start
  At at;                    // begin, done
  std::string op;           // begin
  RunOutcome outcome;       // outcome
};

std::string formatEvent(const Event& e);
/// Parses one line (without its newline); nullopt for anything that is not an event.
std::optional<Event> parseEvent(std::string_view line);

/// Writes events to a file descriptor, unbuffered. A negative fd writes nothing.
class EventWriter {
 public:
  explicit EventWriter(int fd) : fd_(fd) {}
  void write(const Event& e) const;

 private:
  int fd_;
};

}  // namespace gpufuzz
