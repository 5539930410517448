// LifecycleModel.cpp: the `.model` format (docs/models.md): parsing, every check, the built-ins.
#include "model/LifecycleModel.h"

#include <algorithm>
#include <charconv>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "base/InputError.h"
#include "model/BuiltinModels.h"
#include "model/InputFile.h"

namespace gpufuzz {
namespace {

constexpr std::size_t kMaxFlagsPerKind = 64;
constexpr uint32_t kMaxWeight = 1000000;
constexpr std::size_t kMaxOps = 4096;

bool isModelName(std::string_view text) {
  if (text.empty() || text.front() < 'a' || text.front() > 'z') return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

bool isPrefix(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

bool isWord(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

/// A decimal unsigned integer of at most 2^64-1, or nullopt.
std::optional<uint64_t> readUnsigned(std::string_view text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::string fnv1a(std::string_view text) {
  uint64_t h = 14695981039346656037ULL;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4)
    out[static_cast<std::size_t>(i)] = kHex[h & 0xf];
  return out;
}

/// One line of the file, kept until every resource is known.
struct Statement {
  int line;
  std::vector<Token> tokens;
};

class ModelParser {
 public:
  ModelParser(const std::string& file, bool builtin) : file_(file), builtin_(builtin) {}

  LifecycleModel parse(std::string_view text) {
    model_.text = std::string(text);
    model_.hash = fnv1a(text);
    model_.builtin = builtin_;
    split(text);
    readHeader();
    // Resources first, so that slots, owners and flags may name a kind declared further down.
    for (const Statement& s : statements_) {
      if (s.tokens.front().text == "resource") readResource(s);
    }
    resolveOwners();
    for (const Statement& s : statements_) {
      const std::string_view word = s.tokens.front().text;
      if (word == "op") readOp(s);
      if (word == "release") readRelease(s);
    }
    checkWhole();
    return std::move(model_);
  }

 private:
  [[noreturn]] void fail(int line, int column, const std::string& message) const {
    throw InputError(file_, line, column, message);
  }
  [[noreturn]] void fail(const Statement& s, const Token& t, const std::string& message) const {
    fail(s.line, t.column, message);
  }

  void split(std::string_view text) {
    int line = 0;
    std::size_t begin = 0;
    while (begin <= text.size()) {
      const std::size_t end = std::min(text.find('\n', begin), text.size());
      ++line;
      std::string_view content = text.substr(begin, end - begin);
      content = content.substr(0, content.find('#'));
      if (std::vector<Token> tokens = tokenize(content); !tokens.empty()) {
        statements_.push_back({line, std::move(tokens)});
      }
      // A final newline ends the last line; it does not begin another.
      if (end < text.size() || !content.empty()) lastLine_ = line;
      begin = end + 1;
    }
  }

  /// `model NAME` first, then at most one `note`; every line's first word is known.
  void readHeader() {
    static const std::set<std::string_view> kWords = {"model", "note", "resource", "op", "release"};
    if (statements_.empty()) fail(1, 1, "empty model: it must begin with 'model NAME'");
    for (const Statement& s : statements_) {
      const Token& head = s.tokens.front();
      if (!kWords.contains(head.text)) {
        fail(s, head,
             "unknown word " + inQuotes(head.text) +
                 ": a line is 'model', 'note', 'resource', 'op' or 'release'");
      }
    }
    const Statement& first = statements_.front();
    if (first.tokens.front().text != "model") {
      fail(first, first.tokens.front(), "the first declaration must be 'model NAME'");
    }
    for (std::size_t i = 1; i < statements_.size(); ++i) {
      const Statement& s = statements_[i];
      const std::string_view word = s.tokens.front().text;
      if (word == "model") {
        fail(s, s.tokens.front(),
             "a second 'model' line: the model is named once, on line " +
                 std::to_string(first.line));
      }
      if (word == "note") readNote(s);
    }
    if (first.tokens.size() < 2) fail(first, first.tokens.front(), "'model' needs a NAME");
    const Token& name = first.tokens[1];
    if (!isModelName(name.text)) {
      fail(first, name, "bad model name " + inQuotes(name.text) + ": names match [a-z][a-z0-9_-]*");
    }
    if (!builtin_ && isBuiltinModelName(name.text)) {
      fail(first, name,
           "model name " + inQuotes(name.text) +
               " is reserved for a built-in model; give the model a name of its own");
    }
    if (first.tokens.size() > 2) {
      fail(first, first.tokens[2],
           "unexpected " + inQuotes(first.tokens[2].text) + " after the name");
    }
    model_.name = std::string(name.text);
    modelLine_ = first.line;
  }

  void readNote(const Statement& s) {
    if (noteLine_ != 0) {
      fail(s, s.tokens.front(),
           "a second 'note' line: the first is on line " + std::to_string(noteLine_));
    }
    noteLine_ = s.line;
    if (s.tokens.size() < 2) fail(s, s.tokens.front(), "'note' needs a TEXT");
    std::string text;
    for (std::size_t i = 1; i < s.tokens.size(); ++i)
      text += (i > 1 ? " " : "") + std::string(s.tokens[i].text);
    model_.note = text;
  }

  void readResource(const Statement& s) {
    const auto& t = s.tokens;
    if (t.size() < 2) fail(s, t[0], "'resource' needs a KIND");
    const Token& kind = t[1];
    if (!isIdentifier(kind.text)) {
      fail(s, kind, "bad kind " + inQuotes(kind.text) + ": kinds match [a-z][a-z0-9_]*");
    }
    if (const auto k = model_.kind(kind.text)) {
      fail(s, kind,
           "duplicate kind " + inQuotes(kind.text) + ": first declared on line " +
               std::to_string(model_.resources[*k].line));
    }
    ResourceDecl r;
    r.kind = std::string(kind.text);
    r.prefix = std::string(1, kind.text.front());
    r.line = s.line;
    Token prefixToken = kind;
    bool sawPrefix = false, sawOwner = false;
    for (std::size_t i = 2; i < t.size(); i += 2) {
      const Token& word = t[i];
      if (word.text != "prefix" && word.text != "owner") {
        fail(s, word,
             "unexpected " + inQuotes(word.text) + ": expected 'prefix P' or 'owner KIND'");
      }
      bool& seen = word.text == "prefix" ? sawPrefix : sawOwner;
      if (seen) fail(s, word, "'" + std::string(word.text) + "' is given twice");
      seen = true;
      if (i + 1 >= t.size()) fail(s, word, "'" + std::string(word.text) + "' needs a value");
      const Token& value = t[i + 1];
      if (word.text == "prefix") {
        if (!isPrefix(value.text)) {
          fail(s, value, "bad prefix " + inQuotes(value.text) + ": prefixes match [a-z]+");
        }
        r.prefix = std::string(value.text);
        prefixToken = value;
      } else {
        owners_.push_back({model_.resources.size(), s, value});
      }
    }
    for (const ResourceDecl& other : model_.resources) {
      if (other.prefix == r.prefix) {
        fail(s, prefixToken,
             "prefix " + inQuotes(r.prefix) + " is already " + inQuotes(other.kind) + "'s (line " +
                 std::to_string(other.line) +
                 "): prefixes are distinct; give this kind 'prefix P'");
      }
    }
    model_.resources.push_back(std::move(r));
  }

  std::size_t kindAt(const Statement& s, const Token& t, std::string_view kind,
                     std::string_view what) const {
    if (const auto k = model_.kind(kind)) return *k;
    fail(s, t,
         std::string(what) + " of undeclared kind " + inQuotes(kind) +
             ": declare it with 'resource " + std::string(kind) + "'");
  }

  void resolveOwners() {
    for (const auto& [index, s, value] : owners_) {
      const std::size_t owner = kindAt(s, value, value.text, "owner");
      if (owner == index) fail(s, value, "a kind cannot own itself");
      model_.resources[index].owner = owner;
    }
    // A cycle of owners means no resource of the cycle can be made first.
    for (const auto& [index, s, value] : owners_) {
      std::size_t k = index;
      for (std::size_t steps = 0; model_.resources[k].owner; ++steps) {
        k = *model_.resources[k].owner;
        if (k == index || steps > model_.resources.size()) {
          fail(s, value,
               "owner cycle: " + inQuotes(model_.resources[index].kind) +
                   " is owned, through its owners, by itself");
        }
      }
    }
  }

  void readOp(const Statement& s) {
    const auto& t = s.tokens;
    if (t.size() < 2) fail(s, t[0], "'op' needs a NAME");
    const Token& name = t[1];
    if (!isIdentifier(name.text)) {
      fail(s, name, "bad operation name " + inQuotes(name.text) + ": names match [a-z][a-z0-9_]*");
    }
    if (name.text == "end") {
      fail(s, name, "'end' is reserved: the target protocol names the release of leftovers so");
    }
    if (const OpDecl* other = model_.op(name.text)) {
      fail(s, name,
           "duplicate operation " + inQuotes(name.text) + ": first declared on line " +
               std::to_string(other->line));
    }
    if (model_.ops.size() >= kMaxOps) fail(s, name, "too many operations");
    OpDecl op;
    op.name = std::string(name.text);
    op.line = s.line;
    op.index = model_.ops.size();
    std::size_t i = 2;
    readSlots(s, i, op);
    readTail(s, i, op);
    checkOwnership(s, name, op);
    model_.ops.push_back(std::move(op));
  }

  /// SLOT... [-> KIND...]
  void readSlots(const Statement& s, std::size_t& i, OpDecl& op) {
    const auto& t = s.tokens;
    bool introducing = false, listed = false;
    for (; i < t.size(); ++i) {
      std::string_view text = t[i].text;
      if (text == "->") {
        if (introducing) fail(s, t[i], "a second '->': introduced kinds follow one '->'");
        introducing = true;
        if (i + 1 >= t.size()) fail(s, t[i], "'->' needs the KIND it introduces");
        continue;
      }
      if (introducing && (text.ends_with('!') || text.ends_with('*'))) {
        fail(s, t[i], "an introduced kind takes no '!' or '*': it is new");
      }
      if (introducing && !isIdentifier(text) && i > 0 && t[i - 1].text == "->") {
        fail(s, t[i - 1], "'->' needs the KIND it introduces");
      }
      if (text.find('=') != std::string_view::npos || text.starts_with("weight:") ||
          text.starts_with("fails:") || text.starts_with("+") || text.starts_with("-")) {
        return;
      }
      SlotUse use = SlotUse::Use;
      if (introducing) {
        use = SlotUse::Introduce;
      } else if (text.ends_with('!')) {
        use = SlotUse::End;
        text.remove_suffix(1);
      } else if (text.ends_with('*')) {
        use = SlotUse::List;
        text.remove_suffix(1);
      }
      if (listed && (use == SlotUse::Use || use == SlotUse::End)) {
        fail(s, t[i],
             "slot " + inQuotes(t[i].text) + " after the list slot: a KIND* slot comes last");
      }
      if (!isIdentifier(text)) {
        fail(s, t[i],
             "unexpected " + inQuotes(t[i].text) +
                 ": expected a slot (KIND, KIND!, KIND*), '-> KIND', key=DEFAULT, "
                 "weight:N, fails:WORD|WORD or +FLAG(KIND)");
      }
      if (use == SlotUse::List) {
        if (listed) fail(s, t[i], "a second KIND* slot: an operation has at most one");
        listed = true;
      }
      op.slots.push_back({kindAt(s, t[i], text, "slot"), use});
    }
  }

  /// [ARG...] [weight:N] [fails:WORD|WORD...] [EFFECT...], in any order.
  void readTail(const Statement& s, std::size_t& i, OpDecl& op) {
    const auto& t = s.tokens;
    bool sawWeight = false, sawFails = false;
    for (; i < t.size(); ++i) {
      const std::string_view text = t[i].text;
      if (text.starts_with("fails:")) {
        if (sawFails) fail(s, t[i], "fails: is given twice");
        sawFails = true;
        readFails(s, t[i], op);
      } else if (text.starts_with("weight:")) {
        if (sawWeight) fail(s, t[i], "weight is given twice");
        sawWeight = true;
        const auto w = readUnsigned(text.substr(7));
        if (!w || *w < 1 || *w > kMaxWeight) {
          fail(s, t[i],
               inQuotes(text) + ": the weight is an integer in 1.." + std::to_string(kMaxWeight));
        }
        op.weight = static_cast<uint32_t>(*w);
      } else if (text.starts_with("+") || text.starts_with("-")) {
        readEffect(s, t[i], op);
      } else if (text.find('=') != std::string_view::npos) {
        readArg(s, i, op);
      } else {
        fail(s, t[i],
             "unexpected " + inQuotes(text) +
                 ": slots come first, then key=DEFAULT, weight:N, fails:WORD|WORD and +FLAG(KIND)");
      }
    }
  }

  /// `fails:WORD|WORD...`: each word of the vocabulary at most once.
  void readFails(const Statement& s, const Token& tok, OpDecl& op) {
    std::string_view rest = tok.text.substr(6);
    if (rest.empty()) fail(s, tok, "fails: needs a word: " + failWordList());
    int column = tok.column + 6;
    while (true) {
      const std::size_t bar = rest.find('|');
      const std::string_view word = rest.substr(0, bar);
      const Token at{word, column};
      const std::optional<FailWord> known = failWordNamed(word);
      if (!known) {
        fail(s, at, "unknown failure " + inQuotes(word) + " in fails:, expected " + failWordList());
      }
      if (op.fails.has(*known)) fail(s, at, inQuotes(word) + " is given twice in fails:");
      op.fails.add(*known);
      if (bar == std::string_view::npos) break;
      rest = rest.substr(bar + 1);
      column += static_cast<int>(bar) + 1;
    }
  }

  /// `key=DEFAULT (MIN..MAX)` or `key=DEFAULT {a|b|c}`; the bounds may follow without a space.
  void readArg(const Statement& s, std::size_t& i, OpDecl& op) {
    const auto& t = s.tokens;
    const Token& tok = t[i];
    const std::size_t eq = tok.text.find('=');
    const std::string_view key = tok.text.substr(0, eq);
    std::string_view value = tok.text.substr(eq + 1);
    if (!isIdentifier(key)) {
      fail(s, tok, "bad argument key " + inQuotes(key) + ": keys match [a-z][a-z0-9_]*");
    }
    if (op.arg(key)) fail(s, tok, "duplicate argument key " + inQuotes(key));
    int boundsColumn = tok.column + static_cast<int>(tok.text.size());
    std::string_view bounds;
    if (const std::size_t open = value.find_first_of("({"); open != std::string_view::npos) {
      bounds = value.substr(open);
      boundsColumn = tok.column + static_cast<int>(eq + 1 + open);
      value = value.substr(0, open);
    } else if (i + 1 < t.size() &&
               (t[i + 1].text.starts_with("(") || t[i + 1].text.starts_with("{"))) {
      ++i;
      bounds = t[i].text;
      boundsColumn = t[i].column;
    }
    const int valueColumn = tok.column + static_cast<int>(eq) + 1;
    if (value.empty()) fail(s.line, valueColumn, "argument " + inQuotes(key) + " needs a DEFAULT");
    if (bounds.empty()) {
      fail(s.line, boundsColumn,
           "argument " + inQuotes(key) + " needs its bounds: (MIN..MAX) or {a|b|c}");
    }
    ArgDecl a;
    a.key = std::string(key);
    if (bounds.front() == '(') {
      readIntegerBounds(s, boundsColumn, bounds, a);
      const auto d = readUnsigned(value);
      if (!d) {
        fail(s.line, valueColumn,
             "default " + inQuotes(value) + " of " + inQuotes(key) +
                 " is not a decimal integer of at most 18446744073709551615");
      }
      if (*d < a.min || *d > a.max) {
        fail(s.line, valueColumn,
             "default " + std::string(value) + " of " + inQuotes(key) + " is outside its bounds " +
                 a.rangeText());
      }
      a.defaultValue = *d;
    } else {
      readWords(s, boundsColumn, bounds, a);
      const auto it = std::find(a.words.begin(), a.words.end(), value);
      if (it == a.words.end()) {
        fail(s.line, valueColumn,
             "default " + inQuotes(value) + " of " + inQuotes(key) + " is not one of " +
                 a.rangeText());
      }
      a.defaultValue = static_cast<uint64_t>(it - a.words.begin());
      a.max = a.words.size() - 1;
    }
    op.args.push_back(std::move(a));
  }

  void readIntegerBounds(const Statement& s, int column, std::string_view text, ArgDecl& a) const {
    const std::size_t dots = text.find("..");
    if (!text.ends_with(')') || dots == std::string_view::npos) {
      fail(s.line, column, "bad bounds " + inQuotes(text) + ": write (MIN..MAX)");
    }
    const auto lo = readUnsigned(text.substr(1, dots - 1));
    const auto hi = readUnsigned(text.substr(dots + 2, text.size() - dots - 3));
    if (!lo || !hi) {
      fail(s.line, column,
           "bad bounds " + inQuotes(text) +
               ": MIN and MAX are decimal integers of at most 18446744073709551615");
    }
    if (*lo > *hi) fail(s.line, column, "bounds " + inQuotes(text) + " have MIN above MAX");
    a.min = *lo;
    a.max = *hi;
  }

  void readWords(const Statement& s, int column, std::string_view text, ArgDecl& a) const {
    if (!text.ends_with('}') || text.size() < 3) {
      fail(s.line, column, "bad word list " + inQuotes(text) + ": write {a|b|c}");
    }
    std::string_view rest = text.substr(1, text.size() - 2);
    while (true) {
      const std::size_t bar = rest.find('|');
      const std::string_view word = rest.substr(0, bar);
      if (!isWord(word)) {
        fail(s.line, column,
             "bad word " + inQuotes(word) + " in " + inQuotes(text) + ": words match [a-z0-9_-]+");
      }
      if (std::find(a.words.begin(), a.words.end(), word) != a.words.end()) {
        fail(s.line, column, "word " + inQuotes(word) + " is listed twice in " + inQuotes(text));
      }
      a.words.emplace_back(word);
      if (bar == std::string_view::npos) break;
      rest = rest.substr(bar + 1);
    }
  }

  /// `+FLAG(KIND)` / `-FLAG(KIND)`.
  void readEffect(const Statement& s, const Token& tok, OpDecl& op) {
    const std::string_view text = tok.text;
    const std::size_t open = text.find('(');
    if (open == std::string_view::npos || !text.ends_with(')')) {
      fail(s, tok, "bad effect " + inQuotes(text) + ": write +FLAG(KIND) or -FLAG(KIND)");
    }
    const std::string_view flag = text.substr(1, open - 1);
    const std::string_view kind = text.substr(open + 1, text.size() - open - 2);
    if (!isIdentifier(flag)) {
      fail(s, tok, "bad flag " + inQuotes(flag) + ": flags match [a-z][a-z0-9_]*");
    }
    const std::size_t k = kindAt(s, tok, kind, "flag");
    std::optional<std::size_t> slot;
    bool onlyList = false;
    for (std::size_t i = 0; i < op.slots.size() && !slot; ++i) {
      if (op.slots[i].kind != k) continue;
      if (op.slots[i].use == SlotUse::List) {
        onlyList = true;
      } else {
        slot = i;
      }
    }
    if (!slot) {
      fail(s, tok,
           onlyList ? "flag " + inQuotes(text) +
                          " names a kind this operation has only as "
                          "a list, which may be empty"
                    : "flag " + inQuotes(text) + ": " + inQuotes(op.name) +
                          " has no slot of kind " + inQuotes(kind));
    }
    ResourceDecl& r = model_.resources[k];
    auto it = std::find(r.flags.begin(), r.flags.end(), flag);
    if (it == r.flags.end()) {
      if (r.flags.size() >= kMaxFlagsPerKind) {
        fail(s, tok,
             "kind " + inQuotes(r.kind) + " has more than " + std::to_string(kMaxFlagsPerKind) +
                 " flags");
      }
      r.flags.emplace_back(flag);
      it = r.flags.end() - 1;
    }
    const auto f = static_cast<std::size_t>(it - r.flags.begin());
    for (const EffectDecl& e : op.effects) {
      if (e.kind == k && e.flag == f) {
        fail(s, tok,
             "flag " + std::string(flag) + "(" + std::string(kind) +
                 ") is set or cleared twice by one operation");
      }
    }
    op.effects.push_back({text.front() == '+', k, f, *slot});
  }

  /// Every kind an operation introduces that has an owner needs an owner slot it does not end.
  void checkOwnership(const Statement& s, const Token& name, const OpDecl& op) const {
    for (const SlotDecl& slot : op.slots) {
      if (slot.use != SlotUse::Introduce) continue;
      const ResourceDecl& r = model_.resources[slot.kind];
      if (!r.owner) continue;
      const bool hasOwner = std::any_of(op.slots.begin(), op.slots.end(), [&](const SlotDecl& o) {
        return o.kind == *r.owner && (o.use == SlotUse::Use || o.use == SlotUse::Introduce);
      });
      if (!hasOwner) {
        fail(s, name,
             inQuotes(op.name) + " introduces a " + r.kind + ", which is owned by a " +
                 model_.resources[*r.owner].kind + ": give it a " +
                 model_.resources[*r.owner].kind + " slot that it does not end");
      }
    }
  }

  void readRelease(const Statement& s) {
    if (releaseLine_ != 0) {
      fail(s, s.tokens.front(),
           "a second 'release' line: the first is on line " + std::to_string(releaseLine_));
    }
    releaseLine_ = s.line;
    releaseColumn_ = s.tokens.front().column;
    for (std::size_t i = 1; i < s.tokens.size(); ++i) {
      const Token& t = s.tokens[i];
      const std::size_t k = kindAt(s, t, t.text, "release");
      if (std::find(model_.release.begin(), model_.release.end(), k) != model_.release.end()) {
        fail(s, t, "kind " + inQuotes(t.text) + " is released twice: every kind appears once");
      }
      model_.release.push_back(k);
    }
  }

  void checkWhole() {
    if (model_.resources.empty()) {
      fail(modelLine_, 1, "model " + inQuotes(model_.name) + " declares no resource kind");
    }
    if (model_.ops.empty()) {
      fail(modelLine_, 1, "model " + inQuotes(model_.name) + " declares no operation");
    }
    for (std::size_t k = 0; k < model_.resources.size(); ++k) {
      const ResourceDecl& r = model_.resources[k];
      const bool introduced = std::any_of(model_.ops.begin(), model_.ops.end(), [&](const auto& o) {
        return std::any_of(o.slots.begin(), o.slots.end(), [&](const SlotDecl& slot) {
          return slot.kind == k && slot.use == SlotUse::Introduce;
        });
      });
      if (!introduced) {
        fail(r.line, 1,
             "nothing introduces a " + r.kind + ": add an operation with '-> " + r.kind + "'");
      }
    }
    if (releaseLine_ == 0) {
      fail(lastLine_, 1, "missing 'release KIND...': say in which order leftovers are released");
    }
    for (std::size_t k = 0; k < model_.resources.size(); ++k) {
      if (std::find(model_.release.begin(), model_.release.end(), k) == model_.release.end()) {
        fail(releaseLine_, releaseColumn_,
             "release does not name " + inQuotes(model_.resources[k].kind) +
                 ": every kind appears once");
      }
      if (!model_.defaultRelease(k)) {
        model_.warnings.push_back(
            file_ + ":" + std::to_string(model_.resources[k].line) + ":1: warning: a leftover " +
            model_.resources[k].kind +
            " has no default release (no single ending operation without other slots): a target "
            "must register a release handler for it, or it is left to the process's exit");
      }
    }
  }

  struct OwnerRef {
    std::size_t index;
    Statement statement;
    Token value;
  };

  const std::string& file_;
  bool builtin_;
  LifecycleModel model_;
  std::vector<Statement> statements_;
  std::vector<OwnerRef> owners_;
  int modelLine_ = 0, noteLine_ = 0, releaseLine_ = 0, releaseColumn_ = 1, lastLine_ = 1;
};

std::string placeholder(const LifecycleModel& m, std::size_t kind) {
  std::string p = m.resources[kind].prefix;
  for (char& c : p)
    c = static_cast<char>(c - 'a' + 'A');
  return p;
}

}  // namespace

std::string ArgDecl::valueText(uint64_t v) const {
  if (isWord()) return v < words.size() ? words[v] : std::to_string(v);
  return std::to_string(v);
}

std::string ArgDecl::rangeText() const {
  if (!isWord()) return std::to_string(min) + ".." + std::to_string(max);
  std::string text;
  for (const std::string& w : words)
    text += (text.empty() ? "" : "|") + w;
  return text;
}

const ArgDecl* OpDecl::arg(std::string_view key) const {
  const std::optional<std::size_t> i = argIndex(key);
  return i ? &args[*i] : nullptr;
}

std::optional<std::size_t> OpDecl::argIndex(std::string_view key) const {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].key == key) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> OpDecl::listSlot() const {
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].use == SlotUse::List) return i;
  }
  return std::nullopt;
}

std::size_t OpDecl::nameCount(std::size_t listed) const {
  return slots.size() - (listSlot() ? 1 : 0) + listed;
}

std::size_t OpDecl::slotOfName(std::size_t i, std::size_t names) const {
  const std::optional<std::size_t> list = listSlot();
  if (!list || i < *list) return i;
  const std::size_t listed = names + 1 - slots.size();
  if (i < *list + listed) return *list;
  return i - listed + 1;
}

const OpDecl* LifecycleModel::op(std::string_view opName) const {
  for (const OpDecl& o : ops) {
    if (o.name == opName) return &o;
  }
  return nullptr;
}

std::optional<std::size_t> LifecycleModel::kind(std::string_view kindName) const {
  for (std::size_t k = 0; k < resources.size(); ++k) {
    if (resources[k].kind == kindName) return k;
  }
  return std::nullopt;
}

const OpDecl* LifecycleModel::defaultRelease(std::size_t kind) const {
  const OpDecl* found = nullptr;
  for (const OpDecl& o : ops) {
    const bool ends = std::any_of(o.slots.begin(), o.slots.end(), [&](const SlotDecl& s) {
      return s.kind == kind && s.use == SlotUse::End;
    });
    if (!ends) continue;
    if (found) return nullptr;
    found = &o;
  }
  return found && found->slots.size() == 1 ? found : nullptr;
}

std::string LifecycleModel::usage(const OpDecl& o) const {
  std::string out = o.name;
  for (const SlotDecl& s : o.slots) {
    const std::string p = placeholder(*this, s.kind);
    out += " " + (s.use == SlotUse::List ? "[" + p + "...]" : p);
  }
  for (const ArgDecl& a : o.args)
    out += " [" + a.key + "=" + a.rangeText() + "]";
  return out;
}

std::string LifecycleModel::describe() const {
  std::string out = "model " + name + " (" + std::to_string(resources.size()) + " kinds, " +
                    std::to_string(ops.size()) + " operations, hash " + hash + ")\n";
  if (!note.empty()) out += "  " + note + "\n";
  for (const ResourceDecl& r : resources) {
    out += "resource " + r.kind + ": names " + r.prefix + "0, " + r.prefix + "1, ...";
    if (r.owner) out += "; owned by a " + resources[*r.owner].kind;
    if (!r.flags.empty()) {
      out += "; flags";
      for (const std::string& f : r.flags)
        out += " " + f;
    }
    out += "\n";
  }
  for (const OpDecl& o : ops) {
    out += "op " + usage(o) + "  (weight " + std::to_string(o.weight);
    // The words a mark may ask of it (docs/failures.md).
    if (!o.fails.empty()) out += "; fails " + o.fails.text();
    out += ")\n";
  }
  out += "release";
  for (const std::size_t k : release)
    out += " " + resources[k].kind;
  return out + "\n";
}

bool isIdentifier(std::string_view text) {
  if (text.empty() || text.front() < 'a' || text.front() > 'z') return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

LifecycleModel parseModel(std::string_view text, const std::string& file, bool builtin) {
  LifecycleModel m = ModelParser(file, builtin).parse(text);
  m.source = file;
  return m;
}

const LifecycleModel& internModel(LifecycleModel model) {
  static std::mutex mutex;
  static std::deque<std::unique_ptr<const LifecycleModel>> kept;
  std::lock_guard lock(mutex);
  for (const auto& m : kept) {
    if (m->hash == model.hash && m->source == model.source && m->text == model.text) return *m;
  }
  auto owned = std::make_unique<LifecycleModel>(std::move(model));
  for (OpDecl& op : owned->ops)
    op.model = owned.get();
  kept.push_back(std::move(owned));
  return *kept.back();
}

std::vector<std::string> builtinModelNames() {
  std::vector<std::string> names;
  for (const BuiltinModelText& b : builtinModelTexts())
    names.emplace_back(b.name);
  return names;
}

bool isBuiltinModelName(std::string_view name) {
  for (const BuiltinModelText& b : builtinModelTexts()) {
    if (b.name == name) return true;
  }
  return false;
}

const LifecycleModel& builtinModel(std::string_view name) {
  // Parsed once each: a sequence file names its model on every read.
  static const std::vector<const LifecycleModel*> parsed = [] {
    std::vector<const LifecycleModel*> out;
    for (const BuiltinModelText& b : builtinModelTexts()) {
      LifecycleModel m = parseModel(b.text, "builtin:" + std::string(b.name), true);
      m.source = std::string(b.name);
      out.push_back(&internModel(std::move(m)));
    }
    return out;
  }();
  for (const LifecycleModel* m : parsed) {
    if (m->name == name) return *m;
  }
  std::string names;
  for (const std::string& n : builtinModelNames())
    names += (names.empty() ? "" : ", ") + n;
  throw InputError("unknown model " + inQuotes(name) + ": the built-in models are " + names +
                   "; a model file's path contains '/' or ends in .model");
}

const LifecycleModel& loadModelFile(const std::string& path) {
  return internModel(parseModel(readInputFile(path, "model file"), path));
}

bool isModelPath(std::string_view value) {
  return value.find('/') != std::string_view::npos || value.ends_with(".model");
}

const LifecycleModel& resolveModel(std::string_view value, const std::string& baseDir) {
  if (!isModelPath(value)) return builtinModel(value);
  std::filesystem::path p{std::string(value)};
  if (p.is_relative() && !baseDir.empty()) p = std::filesystem::path(baseDir) / p;
  return loadModelFile(p.lexically_normal().string());
}

}  // namespace gpufuzz
