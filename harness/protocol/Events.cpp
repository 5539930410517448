// Events.cpp: formatting and parsing of runner progress events.
#include "harness/protocol/Events.h"

#include "gpufuzz/target.hpp"

#include <unistd.h>

#include "harness/base/OutsideText.h"
#include "model/LifecycleModel.h"

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

/// An operation's or an effect's name as a model writes it ([a-z][a-z0-9_]*): such a word alone
/// goes into a finding's folder name and signature.
bool isOperationWord(const std::string& word) {
  return isIdentifier(word);
}

/// The rest of the line, from its next word on, under the rule for outside text (one line).
std::string restOfLine(std::istringstream& in) {
  std::string rest;
  std::getline(in >> std::ws, rest);
  return outsideLine(rest);
}

std::optional<At> parseAt(std::string_view token) {
  if (token == "end") return At{};
  uint32_t n = 0;
  auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), n);
  if (ec != std::errc() || ptr != token.data() + token.size() || n == 0) return std::nullopt;
  return At{n};
}

}  // namespace

std::string formatEvent(const Event& e) {
  // Appended to a string, not streamed: a stream's locale setup cost a forked child more page
  // faults than its event lines.
  using std::to_string;
  switch (e.kind) {
    case Event::Kind::Start:
      return "start " + to_string(e.operations);
    case Event::Kind::Begin:
      return "begin " + atText(e.at) + ' ' + e.op;
    case Event::Kind::Done:
      return "done " + atText(e.at);
    case Event::Kind::Outcome: {
      std::string out = "outcome ";
      out += e.outcome.unsupported ? "unsupported" : outcomeClassName(e.outcome.cls);
      out += ' ' + (e.outcome.at ? atText(*e.outcome.at) : "-") + ' ';
      out += (e.outcome.op.empty() ? "-" : e.outcome.op) + ' ' + oneLine(e.outcome.detail);
      return out;
    }
    case Event::Kind::Fault: {
      std::string out = "fault " + e.op + ' ';
      if (e.faultAt) out += '@' + atText(*e.faultAt) + ' ';
      return out + oneLine(e.rule);
    }
    case Event::Kind::Fail:
      return "fail " + atText(e.at) + ' ' + oneLine(e.detail);
    case Event::Kind::Skip:
      return "skip " + atText(e.at);
    case Event::Kind::Calls:
      return "calls " + to_string(e.calls) + ' ' + to_string(e.overlapped);
    case Event::Kind::Near:
      return "near " + to_string(e.held) + ' ' + to_string(e.conditions) + ' ' + oneLine(e.rule);
    case Event::Kind::Reach:
      return "reach " + to_string(e.conditions) + ' ' + to_string(e.held) + ' ' + oneLine(e.rule);
  }
  return {};
}

std::optional<Event> parseEvent(std::string_view line) {
  std::istringstream in{std::string(line)};
  std::string kind;
  in >> kind;
  Event e;
  std::string at;
  if (kind == "start") {
    e.kind = Event::Kind::Start;
    std::string count;
    if (!(in >> count)) return std::nullopt;
    const auto [ptr, ec] = std::from_chars(count.data(), count.data() + count.size(), e.operations);
    if (ec != std::errc() || ptr != count.data() + count.size()) return std::nullopt;
    return e;
  }
  if (kind == "begin" || kind == "done") {
    e.kind = kind == "begin" ? Event::Kind::Begin : Event::Kind::Done;
    if (!(in >> at)) return std::nullopt;
    auto parsed = parseAt(at);
    if (!parsed) return std::nullopt;
    e.at = *parsed;
    if (e.kind == Event::Kind::Begin && (!(in >> e.op) || !isOperationWord(e.op)))
      return std::nullopt;
    return e;
  }
  if (kind == "fail" || kind == "skip") {
    e.kind = kind == "fail" ? Event::Kind::Fail : Event::Kind::Skip;
    if (!(in >> at)) return std::nullopt;
    const std::optional<At> parsed = parseAt(at);
    // The release at the end is never failed nor skipped: its calls are releases.
    if (!parsed || parsed->isEnd()) return std::nullopt;
    e.at = *parsed;
    if (e.kind == Event::Kind::Fail) {
      e.detail = restOfLine(in);
      if (e.detail.empty()) return std::nullopt;
    } else {
      std::string more;
      if (in >> more) return std::nullopt;
    }
    return e;
  }
  if (kind == "calls") {
    e.kind = Event::Kind::Calls;
    std::string made;
    std::string overlapped;
    std::string more;
    if (!(in >> made >> overlapped) || (in >> more)) return std::nullopt;
    const auto count = [](const std::string& word, uint64_t& n) {
      const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), n);
      return ec == std::errc() && ptr == word.data() + word.size();
    };
    if (!count(made, e.calls) || !count(overlapped, e.overlapped) || e.overlapped > e.calls)
      return std::nullopt;
    return e;
  }
  if (kind == "reach") {
    e.kind = Event::Kind::Reach;
    if (!(in >> e.conditions >> e.held) || e.conditions == 0) return std::nullopt;
    e.rule = restOfLine(in);
    if (e.rule.empty()) return std::nullopt;
    return e;
  }
  if (kind == "near") {
    e.kind = Event::Kind::Near;
    if (!(in >> e.held >> e.conditions) || e.conditions > 64 ||
        (e.conditions < 64 && e.held >> e.conditions != 0)) {
      return std::nullopt;
    }
    e.rule = restOfLine(in);
    if (e.rule.empty()) return std::nullopt;
    return e;
  }
  if (kind == "fault") {
    e.kind = Event::Kind::Fault;
    if (!(in >> e.op) || !isOperationWord(e.op)) return std::nullopt;
    e.rule = restOfLine(in);
    if (e.rule.starts_with('@')) {
      const std::size_t space = e.rule.find(' ');
      e.faultAt = parseAt(std::string_view(e.rule).substr(1, space - 1));
      if (!e.faultAt || space == std::string::npos) return std::nullopt;
      e.rule.erase(0, e.rule.find_first_not_of(' ', space));
    }
    if (e.rule.empty()) return std::nullopt;
    return e;
  }
  if (kind == "outcome") {
    e.kind = Event::Kind::Outcome;
    std::string cls, op;
    if (!(in >> cls >> at >> op)) return std::nullopt;
    const bool unsupported = cls == "unsupported";
    auto c = unsupported ? std::optional(OutcomeClass::Error) : parseOutcomeClass(cls);
    if (!c) return std::nullopt;
    e.outcome.cls = *c;
    e.outcome.unsupported = unsupported;
    if (at != "-") {
      e.outcome.at = parseAt(at);
      if (!e.outcome.at) return std::nullopt;
    }
    if (op != "-") {
      if (!isOperationWord(op)) return std::nullopt;
      e.outcome.op = op;
    }
    e.outcome.detail = restOfLine(in);
    // The older form of target.md: `outcome error <at> <op> unsupported operation`.
    if (e.outcome.cls == OutcomeClass::Error &&
        e.outcome.detail.starts_with("unsupported operation"))
      e.outcome.unsupported = true;
    return e;
  }
  return std::nullopt;
}

EventOrder::EventOrder(std::vector<std::string> expectedOps,
                       std::vector<std::vector<std::size_t>> waits)
    : expected_(std::move(expectedOps)), waits_(std::move(waits)) {}

std::string EventOrder::waitedFor(const Event& e, const char* verb) const {
  const uint32_t k = e.at.ordinal;
  if (k - 1 >= waits_.size()) return {};
  for (const std::size_t w : waits_[k - 1]) {
    if (!finished_[w]) {
      return std::string(verb) + " " + atText(e.at) + " before operation " + std::to_string(w + 1) +
             ", which it waits for, is done";
    }
  }
  return {};
}

std::string EventOrder::acceptBegin(const Event& e) {
  if (e.at.isEnd()) {
    if (!running_.empty())
      return "begin end while operation " + std::to_string(*running_.begin()) + " runs";
    if (done_ != operations_) {
      return "begin end before operation " + std::to_string(done_ + 1) + " is done";
    }
    if (endBegun_) return "a second begin end";
    if (e.op != kEndOperation) return "begin end names '" + e.op + "', not end";
    endBegun_ = endRunning_ = true;
    return {};
  }
  if (endBegun_) return "an operation after the release of leftovers";
  const uint32_t k = e.at.ordinal;
  if (k > operations_) {
    return "begin " + atText(e.at) + " of " + std::to_string(operations_) + " operations";
  }
  if (!expected_.empty() && e.op != expected_[k - 1]) {
    return "begin " + atText(e.at) + " names '" + e.op + "', the operation is " + expected_[k - 1];
  }
  if (waits_.empty()) {
    if (!running_.empty())
      return "begin while operation " + std::to_string(*running_.begin()) + " runs";
    if (k != done_ + 1) {
      return "begin " + atText(e.at) + " where operation " + std::to_string(done_ + 1) + " is next";
    }
  } else {
    if (begun_[k - 1]) return "a second begin " + atText(e.at);
    if (std::string why = waitedFor(e, "begin"); !why.empty()) return why;
  }
  begun_[k - 1] = true;
  running_.insert(k);
  return {};
}

std::string EventOrder::acceptSkip(const Event& e) {
  if (endBegun_) return "a skip after the release of leftovers";
  const uint32_t k = e.at.ordinal;
  if (k > operations_) return "skip " + atText(e.at) + " of " + std::to_string(operations_);
  if (waits_.empty()) {
    if (!running_.empty())
      return "skip while operation " + std::to_string(*running_.begin()) + " runs";
    if (k != done_ + 1) {
      return "skip " + atText(e.at) + " where operation " + std::to_string(done_ + 1) + " is next";
    }
  } else {
    if (begun_[k - 1]) return "skip " + atText(e.at) + " after its begin";
    if (std::string why = waitedFor(e, "skip"); !why.empty()) return why;
  }
  begun_[k - 1] = finished_[k - 1] = true;
  ++done_;
  return {};
}

std::string EventOrder::accept(const Event& e) {
  if (ended_) return "an event after the outcome";
  if (!started_ && e.kind != Event::Kind::Start) return "an event before start";
  switch (e.kind) {
    case Event::Kind::Start:
      if (started_) return "a second start";
      if (!expected_.empty() && e.operations != expected_.size()) {
        return "start counts " + std::to_string(e.operations) + " operations, the sequence has " +
               std::to_string(expected_.size());
      }
      started_ = true;
      operations_ = e.operations;
      begun_.assign(operations_, false);
      finished_.assign(operations_, false);
      return {};
    case Event::Kind::Begin:
      return acceptBegin(e);
    case Event::Kind::Skip:
      return acceptSkip(e);
    case Event::Kind::Fail:
    case Event::Kind::Done:
      if (e.at.isEnd()) {
        if (e.kind == Event::Kind::Fail) return "fail end: the release at the end never fails";
        if (!endRunning_) return "done end without its begin";
        endRunning_ = false;
        endDone_ = true;
        return {};
      }
      if (!running_.contains(e.at.ordinal)) {
        return std::string(e.kind == Event::Kind::Fail ? "fail " : "done ") + atText(e.at) +
               (running_.empty()
                    ? " without its begin"
                    : " while operation " + std::to_string(*running_.begin()) + " runs");
      }
      running_.erase(e.at.ordinal);
      finished_[e.at.ordinal - 1] = true;
      ++done_;
      return {};
    case Event::Kind::Calls:
    case Event::Kind::Near:
    case Event::Kind::Reach:
      return {};
    case Event::Kind::Fault:
      if (running_.empty() && !endRunning_) return "a fault outside an operation";
      if (e.faultAt && !(e.faultAt->isEnd() ? endRunning_ : running_.contains(e.faultAt->ordinal)))
        return "a fault in operation " + atText(*e.faultAt) + ", which is not running";
      return {};
    case Event::Kind::Outcome:
      switch (e.outcome.cls) {
        case OutcomeClass::Hang:
        case OutcomeClass::Spin:
        case OutcomeClass::Slow:
        case OutcomeClass::Crash:
          return "outcome " + std::string(outcomeClassName(e.outcome.cls)) +
                 ": the harness judges hangs, spins, slowness and crashes, not the child";
        default:
          break;
      }
      if (e.outcome.cls == OutcomeClass::Pass &&
          (done_ != operations_ || !running_.empty() || endRunning_)) {
        return "outcome pass with operation " +
               (!running_.empty() ? std::to_string(*running_.begin()) + " running"
                : endRunning_     ? std::string("end running")
                                  : std::to_string(done_ + 1) + " not run");
      }
      if (e.outcome.at && !e.outcome.at->isEnd() && e.outcome.at->ordinal > operations_) {
        return "outcome at " + atText(*e.outcome.at) + " of " + std::to_string(operations_) +
               " operations";
      }
      ended_ = true;
      return {};
  }
  return {};
}

void EventWriter::write(const Event& e) const {
  target::Events(fd_).line(formatEvent(e));
}

}  // namespace gpufuzz
