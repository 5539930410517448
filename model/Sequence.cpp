// Sequence.cpp: the `.seq` text format (docs/sequences.md): parsing with every error placed at its
// line and column, printing, renumbering.
#include "model/Sequence.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "base/InputError.h"
#include "model/InputFile.h"
#include "model/ModelState.h"
#include "model/Schedule.h"

namespace gpufuzz {
namespace {

constexpr uint32_t kMaxOrdinal = std::numeric_limits<uint32_t>::max();

std::string joined(const auto& items, std::string_view separator = ", ") {
  std::string text;
  for (const auto& item : items) {
    text += (text.empty() ? "" : std::string(separator)) + item;
  }
  return text;
}

/// Why `text` is not a decimal integer in [min, max] ("is negative", ...), or empty with `out`
/// set.
std::string readInteger(std::string_view text, uint64_t min, uint64_t max, uint64_t& out) {
  if (text.empty()) return "has no value";
  const bool negative = text.front() == '-';
  const std::string_view digits = negative ? text.substr(1) : text;
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return "is not a decimal integer";
  }
  if (negative) return "is negative";
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  if (ec == std::errc::result_out_of_range || out < min || out > max) return "is out of bounds";
  return {};
}

std::string range(uint64_t min, uint64_t max) {
  return std::to_string(min) + ".." + std::to_string(max);
}

/// What is wrong with a directive's value, and where in the value (1-based).
struct Problem {
  std::string message;
  int column = 1;
};

Problem readExpectation(std::string_view value, std::optional<Expectation>& out) {
  const std::vector<Token> t = tokenize(value);
  const std::optional<OutcomeClass> cls = parseOutcomeClass(t[0].text);
  if (!cls) {
    return {"unknown outcome class " + inQuotes(t[0].text) +
            ": expected pass, hang, spin, slow, crash, error, mismatch or leak"};
  }
  Expectation e{*cls, std::nullopt};
  if (t.size() > 1) {
    if (t[1].text != "at") {
      return {"expected 'at N' or 'at end' after the class, got " + inQuotes(t[1].text),
              t[1].column};
    }
    if (*cls == OutcomeClass::Pass || *cls == OutcomeClass::Leak) {
      return {std::string(outcomeClassName(*cls)) +
                  " takes no 'at': it does not happen at one operation",
              t[1].column};
    }
    if (t.size() == 2) return {"missing N or 'end' after 'at'", t[1].column};
    if (t[2].text == "end") {
      e.at = At{At::kEnd};
    } else {
      uint64_t n = 0;
      if (std::string why = readInteger(t[2].text, 1, kMaxOrdinal, n); !why.empty()) {
        return {"at " + std::string(t[2].text) + " " + why +
                    ": N is the 1-based operation ordinal (1.." + std::to_string(kMaxOrdinal) +
                    ") or 'end'",
                t[2].column};
      }
      e.at = At{static_cast<uint32_t>(n)};
    }
    if (t.size() > 3) {
      return {"unexpected " + inQuotes(t[3].text) + " after the place", t[3].column};
    }
  }
  out = e;
  return {};
}

Problem readChoice(std::string_view value, std::string_view what,
                   const std::vector<std::string_view>& choices, std::optional<std::string>& out) {
  for (std::string_view c : choices) {
    if (c == value) {
      out = std::string(value);
      return {};
    }
  }
  std::vector<std::string> names;
  for (std::string_view c : choices) {
    names.emplace_back(c);
  }
  return {"unknown " + std::string(what) + " " + inQuotes(value) + ": expected " + joined(names)};
}

std::vector<std::string> shown(const std::optional<std::string>& v) {
  return v ? std::vector{*v} : std::vector<std::string>{};
}
std::vector<std::string> shown(const std::optional<Expectation>& v) {
  return v ? std::vector{expectationText(*v)} : std::vector<std::string>{};
}
std::vector<std::string> shown(const std::optional<uint64_t>& v) {
  return v ? std::vector{std::to_string(*v)} : std::vector<std::string>{};
}
std::vector<std::string> shown(const std::vector<std::string>& v) {
  return v;
}

/// One directive: how its (trimmed, non-empty) value is read into Directives, and printed back.
struct DirectiveSpec {
  std::string key;
  std::function<Problem(std::string_view value, Directives& d)> read;
  std::function<std::vector<std::string>(const Directives& d)> values;
  bool repeats = false;
};

template <auto Field>
std::vector<std::string> values(const Directives& d) {
  return shown(d.*Field);
}

/// The reader of a directive whose value is a decimal integer in [min, max], into `Field`.
template <auto Field>
std::function<Problem(std::string_view, Directives&)> integerDirective(std::string key,
                                                                       uint64_t min, uint64_t max) {
  return [key = std::move(key), min, max](std::string_view v, Directives& d) {
    uint64_t n = 0;
    if (std::string why = readInteger(v, min, max, n); !why.empty()) {
      return Problem{key + " " + inQuotes(v) + " " + why + ": " + key + " takes an integer in " +
                     range(min, max)};
    }
    d.*Field = n;
    return Problem{};
  };
}

std::string expectKey(std::string_view backend) {
  return "expect." + std::string(backend);
}

// In printing order, notes last.
const std::vector<DirectiveSpec>& directiveSpecs() {
  static const std::vector<DirectiveSpec> specs = [] {
    std::vector<DirectiveSpec> list;
    list.push_back({"backend",
                    [](std::string_view v, Directives& d) {
                      std::vector<std::string_view> choices(kBackendNames.begin(),
                                                            kBackendNames.end());
                      choices.emplace_back("auto");
                      return readChoice(v, "backend", choices, d.backend);
                    },
                    values<&Directives::backend>});
    list.push_back({"target",
                    [](std::string_view v, Directives& d) {
                      d.target = std::string(v);
                      return Problem{};
                    },
                    values<&Directives::target>});
    list.push_back({"policy",
                    [](std::string_view v, Directives& d) {
                      return readChoice(
                          v, "policy",
                          {"shipped", "context-first", "no-destroy-sync", "no-texture-wait"},
                          d.policy);
                    },
                    values<&Directives::policy>});
    list.push_back({"faults",
                    [](std::string_view v, Directives& d) {
                      if (v.find_first_of(kBlank) != std::string_view::npos) {
                        return Problem{"faults takes one plan name or path, without spaces"};
                      }
                      d.faults = std::string(v);
                      return Problem{};
                    },
                    values<&Directives::faults>});
    list.push_back({"model",
                    [](std::string_view v, Directives& d) {
                      if (v.find_first_of(kBlank) != std::string_view::npos) {
                        return Problem{"model takes one model name or path, without spaces"};
                      }
                      d.model = std::string(v);
                      return Problem{};
                    },
                    values<&Directives::model>});
    list.push_back({"threads", integerDirective<&Directives::threads>("threads", 1, kMaxThreads),
                    values<&Directives::threads>});
    list.push_back({"expect",
                    [](std::string_view v, Directives& d) { return readExpectation(v, d.expect); },
                    values<&Directives::expect>});
    for (std::string_view backend : kBackendNames) {
      const std::string name(backend);
      list.push_back({expectKey(backend),
                      [name](std::string_view v, Directives& d) {
                        std::optional<Expectation> e;
                        Problem p = readExpectation(v, e);
                        if (e) d.expectOn[name] = *e;
                        return p;
                      },
                      [name](const Directives& d) {
                        const auto it = d.expectOn.find(name);
                        return it == d.expectOn.end()
                                   ? std::vector<std::string>{}
                                   : std::vector<std::string>{expectationText(it->second)};
                      }});
    }
    list.push_back(
        {"seed",
         integerDirective<&Directives::seed>("seed", 0, std::numeric_limits<uint64_t>::max()),
         values<&Directives::seed>});
    list.push_back({"device-memory",
                    integerDirective<&Directives::deviceMemory>(
                        "device-memory", 1, std::numeric_limits<uint64_t>::max()),
                    values<&Directives::deviceMemory>});
    list.push_back({"schedule",
                    [](std::string_view v, Directives& d) {
                      const std::vector<std::string_view> choices(kScheduleNames.begin(),
                                                                  kScheduleNames.end());
                      return readChoice(v, "schedule", choices, d.schedule);
                    },
                    values<&Directives::schedule>});
    list.push_back(
        {"try",
         integerDirective<&Directives::attempt>("try", 0, std::numeric_limits<uint64_t>::max()),
         values<&Directives::attempt>});
    list.push_back({"found",
                    [](std::string_view v, Directives& d) {
                      d.found = std::string(v);
                      return Problem{};
                    },
                    values<&Directives::found>});
    list.push_back({"note",
                    [](std::string_view v, Directives& d) {
                      d.notes.emplace_back(v);
                      return Problem{};
                    },
                    values<&Directives::notes>, true});
    return list;
  }();
  return specs;
}

const DirectiveSpec* directiveSpec(std::string_view key) {
  for (const DirectiveSpec& d : directiveSpecs()) {
    if (d.key == key) return &d;
  }
  return nullptr;
}

class Parser {
 public:
  Parser(const std::string& file, const LifecycleModel* model) : file_(file), override_(model) {}

  Sequence parse(std::string_view text) {
    size_t begin = 0;
    while (begin <= text.size()) {
      const size_t end = std::min(text.find('\n', begin), text.size());
      ++line_;
      parseLine(text.substr(begin, end - begin));
      begin = end + 1;
    }
    resolveModel();
    checkPlaces();
    checkThreads();
    return std::move(seq_);
  }

 private:
  [[noreturn]] void fail(int column, const std::string& message) const {
    throw InputError(file_, line_, column, message);
  }

  /// The model, once the directives are read: --model, else `# model:`, else `all`. A model
  /// that cannot be read is an error at the directive's value.
  const LifecycleModel& resolveModel() {
    if (seq_.model) return *seq_.model;
    if (override_) {
      seq_.model = override_;
    } else if (seq_.directives.model) {
      try {
        // Only a model file's path is relative to the sequence's folder: a built-in's name is
        // resolved without parsing a path, which a fork server's child paid for in page faults.
        const std::string& value = *seq_.directives.model;
        const std::string dir =
            isModelPath(value) ? std::filesystem::path(file_).parent_path().string() : "";
        seq_.model = &gpufuzz::resolveModel(value, dir);
      } catch (const InputError& e) {
        const auto [line, column] = seq_.directivePlaces.at("model");
        throw InputError(file_, line, column, e.what());
      }
    } else {
      seq_.model = &defaultModel();
    }
    state_.emplace(*seq_.model);
    return *seq_.model;
  }

  void parseLine(std::string_view line) {
    if (seq_.ops.empty() && parseDirective(line)) return;
    std::vector<Token> tokens = tokenize(line.substr(0, line.find('#')));
    if (tokens.empty()) return;
    unsigned thread = 0;
    if (tokens.front().text.starts_with('@')) {
      thread = readThread(tokens.front());
      tokens.erase(tokens.begin());
      if (tokens.empty()) {
        fail(static_cast<int>(line.find('@')) + 1,
             "@" + std::to_string(thread) +
                 " prefixes no operation: write '@T OP NAME...' (a directive takes no @)");
      }
    }
    if (tokens.front().text.starts_with('!')) {
      fail(tokens.front().column, inQuotes(tokens.front().text) +
                                      ": a mark ends an operation line, and this line has no "
                                      "operation: write 'OP NAME... !WORD[@N]'");
    }
    parseOperation(tokens, thread);
  }

  /// The T of `@T`, 0..kMaxThreads-1.
  unsigned readThread(const Token& tok) const {
    uint64_t t = 0;
    if (std::string why = readInteger(tok.text.substr(1), 0, kMaxThreads - 1, t); !why.empty()) {
      fail(tok.column, inQuotes(tok.text) + ": the thread after '@' " + why + ": expected @0..@" +
                           std::to_string(kMaxThreads - 1));
    }
    return static_cast<unsigned>(t);
  }

  /// `# key: value` before the first operation: a directive. Returns false for other lines.
  bool parseDirective(std::string_view line) {
    const auto keyStart = [](char c) { return c >= 'a' && c <= 'z'; };
    const auto keyChar = [&](char c) {
      // '-' too: the contract's keys include expect.cuda-async.
      return keyStart(c) || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    };
    size_t i = line.find_first_not_of(kBlank);
    if (i == std::string_view::npos || line[i] != '#') return false;
    i = line.find_first_not_of(kBlank, i + 1);
    if (i == std::string_view::npos || !keyStart(line[i])) return false;
    size_t colon = i;
    while (colon < line.size() && keyChar(line[colon])) {
      ++colon;
    }
    if (colon == line.size() || line[colon] != ':') return false;

    const std::string key(line.substr(i, colon - i));
    const int keyColumn = static_cast<int>(i) + 1;
    const DirectiveSpec* spec = directiveSpec(key);
    if (!spec) {
      std::vector<std::string> keys;
      for (const DirectiveSpec& d : directiveSpecs()) {
        keys.emplace_back(d.key);
      }
      fail(keyColumn, "unknown directive " + inQuotes(key) + ": expected one of " + joined(keys) +
                          " (a comment before the first operation must not start with 'word:')");
    }
    if (auto [it, fresh] = directiveLines_.try_emplace(key, line_); !fresh && !spec->repeats) {
      fail(keyColumn, "duplicate directive " + inQuotes(key) + ": first given on line " +
                          std::to_string(it->second));
    }
    const size_t valueStart = std::min(line.find_first_not_of(kBlank, colon + 1), line.size());
    const size_t valueEnd = line.find_last_not_of(kBlank) + 1;
    const int valueColumn = static_cast<int>(valueStart) + 1;
    if (valueStart >= valueEnd) fail(valueColumn, "directive " + inQuotes(key) + " needs a value");
    const Problem p = spec->read(line.substr(valueStart, valueEnd - valueStart), seq_.directives);
    if (!p.message.empty()) fail(valueColumn + p.column - 1, p.message);
    valueColumns_[key] = valueColumn;
    seq_.directivePlaces[key] = {line_, valueColumn};
    return true;
  }

  void parseOperation(const std::vector<Token>& tokens, unsigned thread) {
    const LifecycleModel& model = resolveModel();
    const Token& head = tokens.front();
    const OpDecl* form = model.op(head.text);
    if (!form) {
      std::vector<std::string> names;
      for (const OpDecl& o : model.ops)
        names.emplace_back(o.name);
      fail(head.column, "unknown operation " + inQuotes(head.text) + " in model " + model.name +
                            ": expected one of " + joined(names));
    }
    const auto formHint = [&] { return "; the form is " + model.usage(*form); };
    const std::size_t fixed = form->nameCount(0);
    const std::size_t most = form->mostNames();
    Operation op;
    op.form = form;
    op.line = line_;
    op.thread = thread;
    for (const ArgDecl& a : form->args)
      op.args.push_back(a.defaultValue);
    std::vector<Token> words = tokens;
    if (words.back().text.starts_with('!')) {
      op.mark = readMarkToken(words.back(), *form);
      words.pop_back();
    }
    for (const Token& tok : words) {
      if (tok.text.starts_with('!')) {
        fail(tok.column, inQuotes(tok.text) +
                             (op.mark ? ": a second mark: an operation carries at most one"
                                      : ": a mark ends the line, after the names and arguments"));
      }
    }
    const std::vector<Token>& tokensOfOp = words;
    std::vector<int> nameColumns;
    std::set<std::string_view> keys;
    for (size_t t = 1; t < tokensOfOp.size(); ++t) {
      const Token& tok = tokensOfOp[t];
      const size_t eq = tok.text.find('=');
      if (eq == std::string_view::npos) {
        if (keys.empty() && op.names.size() < most) {
          if (std::string why = nameError(tok.text); !why.empty()) fail(tok.column, why);
          op.names.emplace_back(tok.text);
          nameColumns.push_back(tok.column);
        } else if (form->arg(tok.text)) {
          fail(tok.column, "missing '=' after " + inQuotes(tok.text) + ": write " +
                               std::string(tok.text) + "=VALUE");
        } else {
          fail(tok.column, "extra name " + inQuotes(tok.text) + formHint());
        }
        continue;
      }
      if (op.names.size() < fixed) fail(tok.column, "missing name" + formHint());
      const std::string_view key = tok.text.substr(0, eq), value = tok.text.substr(eq + 1);
      if (key.empty()) fail(tok.column, "missing key before '='" + formHint());
      const std::optional<std::size_t> index = form->argIndex(key);
      if (!index) {
        fail(tok.column, form->args.empty()
                             ? form->name + " takes no key=value arguments"
                             : "unknown key " + inQuotes(key) + " for " + form->name + formHint());
      }
      if (!keys.insert(key).second) fail(tok.column, "duplicate key " + inQuotes(key));
      op.args[*index] = readValue(form->args[*index], tok, eq, value);
    }
    if (op.names.size() < fixed) {
      const Token& last = tokensOfOp.back();
      fail(last.column + static_cast<int>(last.text.size()) + 1, "missing name" + formHint());
    }
    if (const ModelState::Verdict v = state_->check(op); !v.ok()) {
      fail(v.nameIndex >= 0 ? nameColumns[static_cast<size_t>(v.nameIndex)] : head.column,
           v.reason);
    }
    state_->applyValid(op);
    seq_.ops.push_back(std::move(op));
  }

  /// The mark `!WORD[@N]` of an operation of `form`: a word of the vocabulary that the operation
  /// declares (`fails:`), N in 1..kMaxMarkNth.
  Mark readMarkToken(const Token& tok, const OpDecl& form) {
    Mark mark;
    std::size_t offset = 0;
    if (std::string why = readMark(tok.text.substr(1), mark, offset); !why.empty()) {
      fail(tok.column + 1 + static_cast<int>(offset), why);
    }
    if (!form.fails.has(mark.word)) {
      fail(tok.column + 1,
           form.name + " cannot fail with " + std::string(failWordName(mark.word)) + ": " +
               (form.fails.empty() ? "its model declares no fails: for it"
                                   : "its model declares fails:" + form.fails.text()));
    }
    return mark;
  }

  /// An argument's value: a decimal integer within its bounds, or one of its words.
  uint64_t readValue(const ArgDecl& arg, const Token& tok, size_t eq, std::string_view value) {
    const int column = tok.column + static_cast<int>(eq) + 1;
    if (arg.isWord()) {
      const auto it = std::find(arg.words.begin(), arg.words.end(), value);
      if (it == arg.words.end()) {
        fail(column, std::string(tok.text) + " is not one of its words: " + arg.key + " takes " +
                         arg.rangeText());
      }
      return static_cast<uint64_t>(it - arg.words.begin());
    }
    uint64_t v = 0;
    if (std::string why = readInteger(value, arg.min, arg.max, v); !why.empty()) {
      fail(column, std::string(tok.text) + " " + why + ": " + arg.key + " takes an integer in " +
                       range(arg.min, arg.max));
    }
    return v;
  }

  /// An expectation's `at N` must name one of the sequence's operations.
  void checkPlaces() {
    const Directives& d = seq_.directives;
    std::vector<std::pair<std::string, Expectation>> expectations;
    if (d.expect) expectations.emplace_back("expect", *d.expect);
    for (const auto& [backend, e] : d.expectOn)
      expectations.emplace_back(expectKey(backend), e);
    for (const auto& [key, e] : expectations) {
      if (!e.at || e.at->isEnd() || e.at->ordinal <= seq_.ops.size()) continue;
      line_ = directiveLines_.at(key);
      fail(valueColumns_.at(key), key + " names operation " + std::to_string(e.at->ordinal) +
                                      ", but the sequence has " + std::to_string(seq_.ops.size()) +
                                      " operations");
    }
  }

  /// A `# threads: N` must say what the `@T` lines do: N = 1 + the largest T.
  void checkThreads() {
    // Checked, then dropped: the count is the operations', and printing writes it from them.
    const std::optional<uint64_t> said = std::exchange(seq_.directives.threads, std::nullopt);
    if (!said || *said == seq_.threadCount()) return;
    line_ = directiveLines_.at("threads");
    fail(valueColumns_.at("threads"),
         "threads says " + std::to_string(*said) + ", but the operations' @T lines make " +
             std::to_string(seq_.threadCount()) + " (1 + the largest T)");
  }

  const std::string& file_;
  const LifecycleModel* override_;
  int line_ = 0;
  Sequence seq_;
  std::optional<ModelState> state_;
  std::map<std::string, int> directiveLines_;
  std::map<std::string, int> valueColumns_;
};

}  // namespace

Expectation Sequence::expectationFor(std::string_view backend) const {
  if (const auto it = directives.expectOn.find(std::string(backend));
      it != directives.expectOn.end()) {
    return it->second;
  }
  return directives.expect.value_or(Expectation{});
}

const LifecycleModel& Sequence::lifecycle() const {
  return model ? *model : defaultModel();
}

unsigned Sequence::threadCount() const {
  unsigned most = 0;
  for (const Operation& op : ops)
    most = std::max(most, op.thread);
  return most + 1;
}

const LifecycleModel& defaultModel() {
  static const LifecycleModel& all = builtinModel("all");
  return all;
}

Sequence parseSequence(std::string_view text, const std::string& file,
                       const LifecycleModel* model) {
  return Parser(file, model).parse(text);
}

Sequence loadSequence(const std::string& path, const LifecycleModel* model) {
  return parseSequence(readInputFile(path, "sequence file"), path, model);
}

Sequence loadSequenceOf(const std::string& path, const LifecycleModel& model) {
  std::optional<InputError> failed;
  Sequence seq;
  try {
    seq = loadSequence(path, &model);
  } catch (const InputError& e) {
    failed = e;
  }
  // A file of another model mostly fails on an operation: its `# model:` says what is wrong.
  if (failed || seq.directives.model) {
    std::optional<Sequence> own;
    try {
      own = loadSequence(path);
    } catch (const InputError&) {
      // Not readable in its own model either: the first error stands.
    }
    if (own && own->directives.model && own->lifecycle().hash != model.hash) {
      const auto [line, column] = own->directivePlaces.at("model");
      throw InputError(
          path, line, column,
          "a sequence of model " + own->lifecycle().name + ", not of model " + model.name);
    }
  }
  if (failed) throw *failed;
  return seq;
}

void validateSequence(const Sequence& seq, const std::string& file) {
  ModelState model(seq.lifecycle());
  for (size_t i = 0; i < seq.ops.size(); ++i) {
    const Operation& op = seq.ops[i];
    if (const ModelState::Verdict v = model.check(op); !v.ok()) {
      const std::string what = operationText(op) + ": " + v.reason;
      if (op.line > 0) throw InputError(file, op.line, 1, what);
      throw InputError(file + ": operation " + std::to_string(i + 1) + " (" + what + ")");
    }
    model.applyValid(op);
  }
}

std::string printSequence(const Sequence& seq) {
  std::string text = "# gpufuzz sequence\n";
  Directives directives = seq.directives;
  directives.threads.reset();
  if (const unsigned n = seq.threadCount(); n > 1) directives.threads = n;
  for (const DirectiveSpec& d : directiveSpecs()) {
    for (const std::string& v : d.values(directives)) {
      text += "# " + std::string(d.key) + ": " + v + "\n";
    }
  }
  for (const Operation& op : seq.ops) {
    text += operationText(op) + "\n";
  }
  return text;
}

Sequence renumbered(const Sequence& seq) {
  Sequence out = seq;
  const LifecycleModel& model = seq.lifecycle();
  std::unordered_map<std::string, std::string> renamed;
  std::vector<int> next(model.resources.size(), 0);
  std::map<unsigned, unsigned> threads;
  for (Operation& op : out.ops) {
    op.thread = threads.try_emplace(op.thread, static_cast<unsigned>(threads.size())).first->second;
    for (size_t i = 0; i < op.names.size(); ++i) {
      const auto [it, fresh] = renamed.try_emplace(op.names[i]);
      if (fresh) {
        const std::size_t kind = op.kindOfName(i);
        const LifecycleModel& own = op.form->model ? *op.form->model : model;
        if (next.size() < own.resources.size()) next.resize(own.resources.size(), 0);
        it->second = own.resources[kind].prefix + std::to_string(next[kind]++);
      }
      op.names[i] = it->second;
    }
  }
  return out;
}

Sequence onOneThread(Sequence seq) {
  for (Operation& op : seq.ops)
    op.thread = 0;
  return seq;
}

std::vector<std::vector<std::size_t>> threadWaits(const Sequence& seq) {
  std::vector<std::vector<std::size_t>> waits(seq.ops.size());
  std::map<unsigned, std::size_t> lastOfThread;
  std::map<std::string, std::size_t, std::less<>> lastOfName;
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    const Operation& op = seq.ops[i];
    std::set<std::size_t> before;
    if (const auto it = lastOfThread.find(op.thread); it != lastOfThread.end())
      before.insert(it->second);
    for (const std::string& name : op.names) {
      if (const auto it = lastOfName.find(name); it != lastOfName.end()) before.insert(it->second);
      lastOfName[name] = i;
    }
    lastOfThread[op.thread] = i;
    waits[i].assign(before.begin(), before.end());
  }
  return waits;
}

std::string normalizedOperations(const Sequence& seq) {
  std::string text;
  for (const Operation& op : renumbered(seq).ops) {
    text += operationText(op) + "\n";
  }
  return text;
}

}  // namespace gpufuzz
