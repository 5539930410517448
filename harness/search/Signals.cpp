#include "harness/search/Signals.h"

#include <bit>
#include <cstdint>
#include <map>
#include <unordered_set>

#include "model/ModelState.h"

namespace gpufuzz {

namespace {

/// 0, 1, 2, 3-4, 5+: counts that differ in kind, not degree (AFL's hit-count buckets).
std::string_view bucket(std::size_t n) {
  if (n == 0) return "0";
  if (n == 1) return "1";
  if (n == 2) return "2";
  if (n <= 4) return "3-4";
  return "5+";
}

/// 1, 2, 3, 4-7, 8-15, 16-31, 32+: AFL's buckets, for counts that grow over a run.
std::string_view wideBucket(std::size_t n) {
  if (n <= 3) return bucket(n);
  if (n < 8) return "4-7";
  if (n < 16) return "8-15";
  if (n < 32) return "16-31";
  return "32+";
}

class Collector {
 public:
  void add(std::string text) {
    const uint64_t h = signalHash(text);
    if (seen_.insert(h).second) out_.push_back({h, std::move(text)});
  }
  std::vector<Signal> take() { return std::move(out_); }

 private:
  std::unordered_set<uint64_t> seen_;
  std::vector<Signal> out_;
};

/// "r[drawn,owner ended,owns 2]": a used name's state before the operation.
std::string nameState(const ModelState& state, const ModelState::Name& n, std::size_t index) {
  const LifecycleModel& model = state.model();
  const ResourceDecl& kind = model.resources[n.kind];
  std::string text = kind.prefix + "[";
  bool first = true;
  const auto part = [&](std::string_view p) {
    if (!first) text += ',';
    text += p;
    first = false;
  };
  for (std::size_t f = 0; f < kind.flags.size(); ++f) {
    if (state.flag(index, f)) part(kind.flags[f]);
  }
  if (n.owner) part(state.names()[*n.owner].alive ? "owner alive" : "owner ended");
  const bool owns = std::any_of(model.resources.begin(), model.resources.end(),
                                [&](const ResourceDecl& r) { return r.owner == n.kind; });
  if (owns) part("owns " + std::string(bucket(state.aliveOwnedBy(index))));
  return text + "]";
}

/// Remembers, for each name `op` introduces, the size it was made with: the product of the
/// operation's numbers, in powers of 16 ("b[size 16^9]" for 16 GiB). Sixteen-fold steps keep a
/// renderer's width and height, or a buffer's every power of two, from multiplying the signals
/// past what a queue can follow. A name made without numbers has no size.
void recordSizes(const LifecycleModel& model, const Operation& op,
                 std::map<std::string, std::string, std::less<>>& out) {
  bool sized = false;
  uint64_t product = 1;
  for (std::size_t a = 0; a < op.args.size() && a < op.form->args.size(); ++a) {
    if (op.form->args[a].isWord()) continue;
    sized = true;
    const uint64_t v = op.args[a];
    product = v != 0 && product > UINT64_MAX / v ? UINT64_MAX : product * v;
  }
  if (!sized) return;
  const std::string size = "size 16^" + std::to_string((std::bit_width(product) + 3) / 4);
  for (std::size_t k = 0; k < op.names.size(); ++k) {
    if (op.useOfName(k) != SlotUse::Introduce) continue;
    out[op.names[k]] = model.resources[op.kindOfName(k)].prefix + "[" + size + "]";
  }
}

/// How many operations the run reached: through the failing one, or all of them.
std::size_t reached(const Sequence& seq, const RunOutcome& outcome) {
  if (outcome.failed() && outcome.at && !outcome.at->isEnd()) {
    return std::min<std::size_t>(outcome.at->ordinal, seq.ops.size());
  }
  return seq.ops.size();
}

}  // namespace

uint64_t signalHash(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a: the same on every machine and build
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::vector<std::string> answerWords(std::string_view message) {
  std::vector<std::string> words;
  static constexpr std::string_view kStarts[] = {"CL_", "CUDA_ERROR_", "VK_", "VUID-"};
  const auto wordChar = [](char c, bool vuid) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           (vuid && ((c >= 'a' && c <= 'z') || c == '-'));
  };
  for (std::size_t i = 0; i < message.size(); ++i) {
    if (i > 0 && wordChar(message[i - 1], true)) continue;
    for (const std::string_view start : kStarts) {
      if (message.substr(i, start.size()) != start) continue;
      const bool vuid = start == "VUID-";
      std::size_t end = i + start.size();
      while (end < message.size() && wordChar(message[end], vuid))
        ++end;
      // A VUID's text ends before a trailing '-' or '.'.
      while (end > i + start.size() && (message[end - 1] == '-' || message[end - 1] == '_'))
        --end;
      if (end > i + start.size()) words.emplace_back(message.substr(i, end - i));
      i = end;
      break;
    }
  }
  return words;
}

std::vector<Signal> signalsOf(const Sequence& seq, const TrialResult& result) {
  Collector signals;
  const RunOutcome& outcome = result.outcome;
  const std::size_t upTo = reached(seq, outcome);
  ModelState state(seq.lifecycle());
  std::map<std::string, std::size_t> stateCounts;
  std::map<const OpDecl*, std::size_t> opCounts;
  std::map<std::string, std::string_view, std::less<>> lastOn;  // name -> last operation on it
  std::map<std::string, std::string, std::less<>> sizes;        // name -> "b[size 16^9]"
  for (std::size_t i = 0; i < upTo; ++i) {
    const Operation& op = seq.ops[i];
    if (!state.check(op).ok()) break;  // a file that breaks the model: nothing past it counts
    std::string text = "state " + std::string(op.name());
    for (std::size_t k = 0; k < op.names.size(); ++k) {
      if (op.useOfName(k) == SlotUse::Introduce) continue;
      const ModelState::Name* n = state.find(op.names[k]);
      if (!n) continue;
      const std::size_t index = static_cast<std::size_t>(n - state.names().data());
      text += ' ' + nameState(state, *n, index);
      if (const auto last = lastOn.find(n->name); last != lastOn.end()) {
        signals.add("pair " + std::string(last->second) + " > " + std::string(op.name()));
      }
      if (n->owner) {
        const std::string& owner = state.names()[*n->owner].name;
        if (const auto last = lastOn.find(owner); last != lastOn.end()) {
          signals.add("pair " + std::string(last->second) + " > " + std::string(op.name()) +
                      " (owned)");
        }
      }
      // What the operation acts on, by size: a fill of a 16 GiB buffer takes another path in a
      // runtime than a fill of 256 bytes, so a mutant that brings a large object to an operation
      // is kept, and mutated further around that object.
      if (const auto size = sizes.find(n->name); size != sizes.end()) {
        signals.add("sized " + std::string(op.name()) + " " + size->second);
      }
    }
    if (op.mark) text += " !" + std::string(failWordName(op.mark->word));
    const std::size_t times = ++stateCounts[text];
    if (times >= 2) signals.add(text + " x" + std::string(bucket(times)));
    signals.add(std::move(text));
    state.applyValid(op);
    for (const std::string& name : op.names)
      lastOn[name] = op.name();
    recordSizes(state.model(), op, sizes);
    // Each argument's magnitude: its word, or the power of two it lies under. A runtime takes
    // other paths at other sizes (32-bit counts past 4 GiB, pools past a page), and a kept
    // mutant that reached a new magnitude is mutated further there.
    for (std::size_t a = 0; a < op.args.size() && a < op.form->args.size(); ++a) {
      const ArgDecl& decl = op.form->args[a];
      signals.add("arg " + std::string(op.name()) + " " + decl.key + " " +
                  (decl.isWord() ? decl.valueText(op.args[a])
                                 : "2^" + std::to_string(std::bit_width(op.args[a]))));
    }
    // Counts over the run: how often each operation ran, how many names of a kind live at once.
    const std::size_t runs = ++opCounts[op.form];
    signals.add("ops " + std::string(op.name()) + " x" + std::string(wideBucket(runs)));
    for (std::size_t k = 0; k < op.names.size(); ++k) {
      const std::size_t kind = op.kindOfName(k);
      signals.add("live " + state.model().resources[kind].kind + " " +
                  std::string(wideBucket(state.alive(kind).size())));
    }
  }
  if (outcome.failed()) {
    signals.add("outcome " + std::string(outcomeClassName(outcome.cls)) + " at " + outcome.op);
    for (const std::string& w : answerWords(outcome.detail))
      signals.add(std::string(kAnswerSignal) + outcome.op + " " + w);
  }
  for (const FailedOperation& f : result.evidence.failed) {
    signals.add("failed " + f.op);
    for (const std::string& w : answerWords(f.detail))
      signals.add(std::string(kAnswerSignal) + f.op + " " + w);
  }
  for (const At& at : result.evidence.skipped) {
    if (!at.isEnd() && at.ordinal <= seq.ops.size()) {
      signals.add("skipped " + std::string(seq.ops[at.ordinal - 1].name()));
    }
  }
  for (const FaultFired& f : result.evidence.faults)
    signals.add("fault " + f.rule);
  for (const std::string& n : result.evidence.near)
    signals.add(std::string(kNearSignal) + n);
  return signals.take();
}

}  // namespace gpufuzz
