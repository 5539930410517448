// Events.cpp: formatting and parsing of runner progress events.
#include "harness/protocol/Events.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <sstream>

namespace gpufuzz {

namespace {

std::string oneLine(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

std::optional<At> parseAt(std::string_view token) {
  if (token == "end") return At{};
  uint32_t n = 0;
  auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), n);
  if (ec != std::errc() || ptr != token.data() + token.size() || n == 0) return std::nullopt;
  return At{n};
}

}  // namespace

std::string outcomeText(const RunOutcome& o) {
  std::string text(outcomeClassName(o.cls));
  if (o.at) text += " at " + atText(*o.at) + " (" + o.op + ")";
  if (!o.detail.empty()) text += ": " + o.detail;
  return text;
}

std::string formatEvent(const Event& e) {
  std::ostringstream out;
  switch (e.kind) {
    case Event::Kind::Start:
      out << "start " << e.operations;
      break;
    case Event::Kind::Begin:
      out << "begin " << atText(e.at) << ' ' << e.op;
      break;
    case Event::Kind::Done:
      out << "done " << atText(e.at);
      break;
    case Event::Kind::Outcome:
      out << "outcome " << outcomeClassName(e.outcome.cls) << ' '
          << (e.outcome.at ? atText(*e.outcome.at) : "-") << ' '
          << (e.outcome.op.empty() ? "-" : e.outcome.op) << ' ' << oneLine(e.outcome.detail);
      break;
  }
  return out.str();
}

std::optional<Event> parseEvent(std::string_view line) {
  std::istringstream in{std::string(line)};
  std::string kind;
  in >> kind;
  Event e;
  if (kind == "start") {
    e.kind = Event::Kind::Start;
    if (!(in >> e.operations)) return std::nullopt;
    return e;
  }
  std::string at;
  if (kind == "begin" || kind == "done") {
    e.kind = kind == "begin" ? Event::Kind::Begin : Event::Kind::Done;
    if (!(in >> at)) return std::nullopt;
    auto parsed = parseAt(at);
    if (!parsed) return std::nullopt;
    e.at = *parsed;
    if (e.kind == Event::Kind::Begin && !(in >> e.op)) return std::nullopt;
    return e;
  }
  if (kind == "outcome") {
    e.kind = Event::Kind::Outcome;
    std::string cls, op;
    if (!(in >> cls >> at >> op)) return std::nullopt;
    auto c = parseOutcomeClass(cls);
    if (!c) return std::nullopt;
    e.outcome.cls = *c;
    if (at != "-") {
      e.outcome.at = parseAt(at);
      if (!e.outcome.at) return std::nullopt;
    }
    if (op != "-") e.outcome.op = op;
    std::getline(in >> std::ws, e.outcome.detail);
    return e;
  }
  return std::nullopt;
}

void EventWriter::write(const Event& e) const {
  if (fd_ < 0) return;
  const std::string line = formatEvent(e) + "\n";
  std::size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the supervisor is gone; the run itself goes on
    off += static_cast<std::size_t>(n);
  }
}

}  // namespace gpufuzz
