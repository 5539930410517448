// FaultPlan.cpp: the plan model and the parser of the plan language.
#include "renderer/faults/FaultPlan.h"

#include <array>
#include <charconv>
#include <functional>
#include <limits>

#include "base/InputError.h"

namespace gpufuzz {

namespace {

constexpr std::array<std::string_view, 7> kEffectNames = {
    "hang", "spin", "crash", "error", "corrupt", "leak", "delay",
};

constexpr std::array<std::string_view, 6> kComparisonSymbols = {">=", "<=", "==", "!=", ">", "<"};

// The calls that return memory, and the calls that produce bytes.
constexpr std::array<CallPoint, 2> kLeakPoints = {CallPoint::BufFree, CallPoint::CtxDestroy};
constexpr std::array<CallPoint, 3> kCorruptPoints = {CallPoint::Launch, CallPoint::CopyToDevice,
                                                     CallPoint::CopyToHost};

std::span<const CallPoint> pointsWhereMeaningful(Effect effect) {
  switch (effect) {
    case Effect::Leak:
      return kLeakPoints;
    case Effect::Corrupt:
      return kCorruptPoints;
    default:
      return kAllCallPoints;
  }
}

constexpr std::string_view kFirstInCtx = "first_in_ctx";

// "a, b or c", for messages that list what was expected; `name` gives each item's string_view.
template <typename Range, typename Name>
std::string listOf(const Range& items, Name name) {
  std::string out;
  std::size_t i = 0;
  for (const auto& item : items) {
    if (i > 0) out += (i + 1 == std::size(items)) ? " or " : ", ";
    out += name(item);
    ++i;
  }
  return out;
}

std::string pointList(std::span<const CallPoint> points) {
  return listOf(points, callPointName);
}

std::string counterList() {
  std::array<std::string_view, kCounterCount + 1> names{};
  names[0] = kFirstInCtx;
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    names[i + 1] = counterName(static_cast<Counter>(i));
  }
  return listOf(names, std::identity{});
}

std::string comparisonList() {
  return listOf(kComparisonSymbols, std::identity{});
}

std::string effectList() {
  std::array<std::string_view, kEffectNames.size()> names = kEffectNames;
  names.back() = "delay=MS";
  return listOf(names, std::identity{});
}

bool isBlank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}
bool isOperatorChar(char c) {
  return c == '<' || c == '>' || c == '=' || c == '!';
}

// Operators are lexed apart from words so that `refs>=1` reads like `refs >= 1`; a run of
// operator characters is one token, so `=>` is reported whole.
struct Token {
  std::string_view text;
  int column = 0;  // 1-based
  bool isOperator = false;
  int end() const { return column + static_cast<int>(text.size()); }
};

std::vector<Token> tokenize(std::string_view line) {
  std::vector<Token> tokens;
  std::size_t i = 0;
  while (i < line.size()) {
    if (isBlank(line[i])) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    const bool op = isOperatorChar(line[i]);
    while (i < line.size() && !isBlank(line[i]) && isOperatorChar(line[i]) == op) {
      ++i;
    }
    tokens.push_back(Token{line.substr(start, i - start), static_cast<int>(start) + 1, op});
  }
  return tokens;
}

std::string quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

// Parses one line's tokens into a rule; every error names the column of the token at fault, or,
// when a token is missing, the column just after the token that needed it.
class RuleParser {
 public:
  RuleParser(const std::string& file, int line, std::vector<Token> tokens)
      : file_(file), line_(line), tokens_(std::move(tokens)) {}

  FaultRule parse() {
    FaultRule rule;
    rule.line = line_;
    parseEffect(rule);
    const Token& at = expectWord("'at' after the effect");
    if (at.text != "at") fail(at.column, "expected 'at', found " + quoted(at.text));
    parsePoint(rule);
    if (atEnd()) return rule;
    const Token& when = next();
    if (when.text != "when") {
      fail(when.column, "unexpected " + quoted(when.text) +
                            " after the call point; conditions start with 'when'");
    }
    for (;;) {
      rule.conditions.push_back(parseCondition());
      if (atEnd()) return rule;
      const Token& joiner = next();
      if (joiner.text == "and") continue;
      if (joiner.isOperator && previous(1).text == kFirstInCtx) {
        fail(joiner.column, "first_in_ctx takes no comparison (it means ctx_calls == 0)");
      }
      fail(joiner.column,
           "unexpected " + quoted(joiner.text) + " after a condition; join conditions with 'and'");
    }
  }

 private:
  [[noreturn]] void fail(int column, const std::string& message) const {
    throw InputError(file_, line_, column, message);
  }

  bool atEnd() const { return pos_ >= tokens_.size(); }
  const Token& next() { return tokens_[pos_++]; }
  // The token `back` places before the next one.
  const Token& previous(std::size_t back) const { return tokens_[pos_ - 1 - back]; }

  // The next token, which must exist; `what` names it for the error when the line ends.
  const Token& expectAny(const std::string& what) {
    if (atEnd()) fail(previous(0).end(), "expected " + what);
    return next();
  }
  const Token& expectWord(const std::string& what) {
    const Token& t = expectAny(what);
    if (t.isOperator) fail(t.column, "expected " + what + ", found " + quoted(t.text));
    return t;
  }

  uint64_t number(const Token& t, uint64_t min, uint64_t max, std::string_view unit) const {
    uint64_t value = 0;
    const char* first = t.text.data();
    const char* last = first + t.text.size();
    const auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec == std::errc::invalid_argument || ptr != last) {
      fail(t.column, quoted(t.text) + " is not a number (" + std::string(unit) + ")");
    }
    if (ec == std::errc::result_out_of_range || value < min || value > max) {
      fail(t.column, quoted(t.text) + " is out of range (" + std::to_string(min) + ".." +
                         std::to_string(max) + ")");
    }
    return value;
  }

  void parseEffect(FaultRule& rule) {
    const Token& effect = next();  // a line with a rule has at least one token
    if (effect.isOperator) fail(effect.column, "expected an effect, found " + quoted(effect.text));
    if (effect.text == "delay") {
      // "delay=" is one terminal: the duration is written without blanks.
      if (atEnd() || tokens_[pos_].text != "=" || tokens_[pos_].column != effect.end()) {
        fail(effect.end(), "delay needs its duration in milliseconds: delay=MS");
      }
      const Token& eq = next();
      if (atEnd() || tokens_[pos_].isOperator || tokens_[pos_].column != eq.end()) {
        fail(eq.end(), "expected milliseconds right after 'delay=' (delay=MS)");
      }
      rule.effect = Effect::Delay;
      rule.delayMs = number(next(), 1, kMaxDelayMs, "milliseconds, digits only");
      return;
    }
    for (std::size_t i = 0; i < kEffectNames.size(); ++i) {
      const auto candidate = static_cast<Effect>(i);
      if (candidate != Effect::Delay && kEffectNames[i] == effect.text) {
        rule.effect = candidate;
        return;
      }
    }
    fail(effect.column,
         "unknown effect " + quoted(effect.text) + " (expected " + effectList() + ")");
  }

  void parsePoint(FaultRule& rule) {
    const std::string expected = "a call point (" + pointList(kAllCallPoints) + ")";
    const Token& point = expectWord(expected + " after 'at'");
    const auto parsed = parseCallPoint(point.text);
    if (!parsed) {
      fail(point.column, "unknown call point " + quoted(point.text) + "; expected " + expected);
    }
    if (!effectAppliesAt(rule.effect, *parsed)) {
      const std::string effect(effectName(rule.effect));
      fail(point.column, effect + " has no meaning at " + std::string(point.text) + ": " + effect +
                             " applies only at " + pointList(pointsWhereMeaningful(rule.effect)));
    }
    rule.point = *parsed;
  }

  Condition parseCondition() {
    const std::string after = " after " + quoted(previous(0).text);
    const Token& name = expectWord("a condition" + after);
    if (name.text == kFirstInCtx) return Condition{Counter::CtxCalls, Comparison::Eq, 0};
    if (name.text == "and" || name.text == "when") {
      fail(name.column, "expected a condition" + after + ", found " + quoted(name.text));
    }
    const auto counter = parseCounter(name.text);
    if (!counter) {
      fail(name.column,
           "unknown counter " + quoted(name.text) + " (expected " + counterList() + ")");
    }
    const std::string comparisons = "a comparison (" + comparisonList() + ")";
    const Token& op = expectAny(comparisons + " after " + quoted(name.text));
    if (!op.isOperator) {
      fail(op.column, "expected " + comparisons + " after " + quoted(name.text) + ", found " +
                          quoted(op.text));
    }
    const auto cmp = parseComparison(op.text);
    if (!cmp) {
      fail(op.column, "unknown comparison " + quoted(op.text) + "; expected " + comparisons);
    }
    const Token& value = expectWord("a number after " + quoted(op.text));
    return Condition{*counter, *cmp,
                     number(value, 0, std::numeric_limits<uint64_t>::max(), "digits only")};
  }

  const std::string& file_;
  int line_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string_view effectName(Effect effect) {
  return kEffectNames[static_cast<std::size_t>(effect)];
}

bool effectAppliesAt(Effect effect, CallPoint point) {
  for (CallPoint p : pointsWhereMeaningful(effect)) {
    if (p == point) return true;
  }
  return false;
}

std::string_view comparisonSymbol(Comparison cmp) {
  return kComparisonSymbols[static_cast<std::size_t>(cmp)];
}

std::optional<Comparison> parseComparison(std::string_view symbol) {
  for (std::size_t i = 0; i < kComparisonSymbols.size(); ++i) {
    if (kComparisonSymbols[i] == symbol) return static_cast<Comparison>(i);
  }
  return std::nullopt;
}

bool Condition::holds(const CounterSnapshot& counters) const {
  const uint64_t actual = counters[counter];
  switch (cmp) {
    case Comparison::Ge:
      return actual >= value;
    case Comparison::Le:
      return actual <= value;
    case Comparison::Eq:
      return actual == value;
    case Comparison::Ne:
      return actual != value;
    case Comparison::Gt:
      return actual > value;
    case Comparison::Lt:
      return actual < value;
  }
  return false;
}

bool FaultRule::matches(CallPoint at, const CounterSnapshot& counters) const {
  if (at != point) return false;
  for (const Condition& c : conditions) {
    if (!c.holds(counters)) return false;
  }
  return true;
}

const FaultRule* FaultPlan::firstMatch(CallPoint at, const CounterSnapshot& counters) const {
  for (const FaultRule& rule : rules) {
    if (rule.matches(at, counters)) return &rule;
  }
  return nullptr;
}

std::string FaultPlan::cite(const FaultRule& rule) const {
  return name + ":" + std::to_string(rule.line) + ": " + rule.text;
}

FaultPlan parseFaultPlan(std::string_view text, const std::string& file) {
  FaultPlan plan;
  plan.name = file;
  plan.file = file;
  int lineNo = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    ++lineNo;
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;

    line = line.substr(0, line.find('#'));
    std::vector<Token> tokens = tokenize(line);
    if (tokens.empty()) continue;
    const std::size_t first = static_cast<std::size_t>(tokens.front().column - 1);
    const std::size_t last = static_cast<std::size_t>(tokens.back().end() - 1);
    FaultRule rule = RuleParser(file, lineNo, std::move(tokens)).parse();
    rule.text = std::string(line.substr(first, last - first));
    plan.rules.push_back(std::move(rule));
  }
  return plan;
}

}  // namespace gpufuzz
