#include "model/Mutations.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "model/ModelState.h"
#include "model/SplitMix.h"

namespace gpufuzz {

namespace {

/// A small deterministic draw: the same seed gives the same mutant on every machine.
class Draw {
 public:
  explicit Draw(uint64_t seed) : state_(seed) {}
  uint64_t next() { return splitmixNext(state_); }
  /// Uniform in 0..n-1; 0 when n is 0.
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }
  bool oneIn(uint64_t n) { return next() % n == 0; }

 private:
  uint64_t state_;
};

/// Every name the sequence mentions.
std::set<std::string> namesIn(const Sequence& seq) {
  std::set<std::string> names;
  for (const Operation& op : seq.ops)
    names.insert(op.names.begin(), op.names.end());
  return names;
}

/// The kind's prefix with the smallest number no name in `taken` has; it joins `taken`.
std::string freshName(const LifecycleModel& model, std::size_t kind, std::set<std::string>& taken) {
  const std::string& prefix = model.resources[kind].prefix;
  for (std::size_t n = 0;; ++n) {
    std::string name = prefix + std::to_string(n);
    if (taken.insert(name).second) return name;
  }
}

/// `ops` with every name they introduce made anew (uses of those names follow), and every other
/// name mapped by `outside` where it has an entry.
std::vector<Operation> renamedApart(std::vector<Operation> ops, const LifecycleModel& model,
                                    std::set<std::string>& taken,
                                    std::map<std::string, std::string> outside = {}) {
  std::map<std::string, std::string> made;
  for (Operation& op : ops) {
    op.line = 0;
    for (std::size_t i = 0; i < op.names.size(); ++i) {
      std::string& name = op.names[i];
      if (op.useOfName(i) == SlotUse::Introduce) {
        name = made[name] = freshName(model, op.kindOfName(i), taken);
      } else if (const auto m = made.find(name); m != made.end()) {
        name = m->second;
      } else if (const auto o = outside.find(name); o != outside.end()) {
        name = o->second;
      }
    }
  }
  return ops;
}

/// The names of `kind` introduced by the first `upTo` operations.
std::vector<std::string> introducedBefore(const Sequence& seq, std::size_t upTo, std::size_t kind) {
  std::vector<std::string> found;
  for (std::size_t p = 0; p < upTo && p < seq.ops.size(); ++p) {
    const Operation& op = seq.ops[p];
    for (std::size_t i = 0; i < op.names.size(); ++i) {
      if (op.useOfName(i) == SlotUse::Introduce && op.kindOfName(i) == kind) {
        found.push_back(op.names[i]);
      }
    }
  }
  return found;
}

/// Puts `op` at `position`: its introduced names new, each other name taken from those of its kind
/// introduced before `position`, slot `pinned` (when below op.names.size()) taking `pinnedName`.
void placeAt(Sequence& seq, Operation op, std::size_t position, Draw& draw,
             std::size_t pinned = SIZE_MAX, const std::string& pinnedName = {}) {
  std::set<std::string> taken = namesIn(seq);
  std::map<std::string, std::string> outside;
  for (std::size_t i = 0; i < op.names.size(); ++i) {
    if (op.useOfName(i) == SlotUse::Introduce || outside.contains(op.names[i])) continue;
    if (i == pinned) {
      outside[op.names[i]] = pinnedName;
      continue;
    }
    const std::vector<std::string> options = introducedBefore(seq, position, op.kindOfName(i));
    if (!options.empty()) outside[op.names[i]] = options[draw.below(options.size())];
  }
  std::vector<Operation> placed = renamedApart({std::move(op)}, seq.lifecycle(), taken, outside);
  const unsigned threads = std::max(1U, seq.threadCount());
  placed.front().thread = static_cast<unsigned>(draw.below(threads));
  seq.ops.insert(seq.ops.begin() + static_cast<std::ptrdiff_t>(position), placed.front());
}

/// Operations the model's generator would make, each with its own names.
std::vector<Operation> drawnOps(const GeneratorConfig& config, Draw& draw) {
  GeneratorConfig one = config;
  one.threads = 1;
  one.inject = {};
  return generateSequence(one, draw.next()).ops;
}

/// An operation the model's generator would make, its used names taken from those introduced
/// before `position`, its introduced names new.
void insertDrawn(Sequence& seq, const GeneratorConfig& config, Draw& draw, std::string& how) {
  const std::vector<Operation> drawn = drawnOps(config, draw);
  if (drawn.empty()) return;
  const Operation& op = drawn[draw.below(drawn.size())];
  const std::size_t position = draw.below(seq.ops.size() + 1);
  how += "insert " + std::string(op.name()) + " at " + std::to_string(position + 1);
  placeAt(seq, op, position, draw);
}

/// Where `name`, made by operation `made`, ends: the position of the operation that ends it, or
/// the sequence's size when none does.
std::size_t endOf(const Sequence& seq, const std::string& name, std::size_t made) {
  for (std::size_t p = made + 1; p < seq.ops.size(); ++p) {
    const Operation& op = seq.ops[p];
    for (std::size_t i = 0; i < op.names.size(); ++i) {
      if (op.names[i] == name && op.useOfName(i) == SlotUse::End) return p;
    }
  }
  return seq.ops.size();
}

/// A name of the sequence given one more operation that uses it, between the operations that make
/// and end it. A runtime's path often needs several operations on one object: a fill of a large
/// buffer, then a read of it. Drawn insertion rarely picks the same object twice among dozens.
void useName(Sequence& seq, const GeneratorConfig& config, Draw& draw, std::string& how) {
  std::vector<std::pair<std::size_t, std::size_t>> intros;  // (operation, slot)
  for (std::size_t p = 0; p < seq.ops.size(); ++p) {
    for (std::size_t i = 0; i < seq.ops[p].names.size(); ++i) {
      if (seq.ops[p].useOfName(i) == SlotUse::Introduce) intros.emplace_back(p, i);
    }
  }
  if (intros.empty()) return;
  const auto [made, slot] = intros[draw.below(intros.size())];
  const std::string name = seq.ops[made].names[slot];
  const std::size_t kind = seq.ops[made].kindOfName(slot);
  // A few drawn sequences, to meet an operation that takes a name of this kind.
  for (int attempt = 0; attempt < 4; ++attempt) {
    std::vector<std::pair<const Operation*, std::size_t>> takers;  // (operation, slot)
    const std::vector<Operation> drawn = drawnOps(config, draw);
    for (const Operation& op : drawn) {
      for (std::size_t i = 0; i < op.names.size(); ++i) {
        if (op.useOfName(i) == SlotUse::Use && op.kindOfName(i) == kind) {
          takers.emplace_back(&op, i);
          break;
        }
      }
    }
    if (takers.empty()) continue;
    const auto [op, at] = takers[draw.below(takers.size())];
    const std::size_t position = made + 1 + draw.below(endOf(seq, name, made) - made);
    how += "use " + name + " in " + std::string(op->name()) + " at " + std::to_string(position + 1);
    placeAt(seq, *op, position, draw, at, name);
    return;
  }
}

void removeOne(Sequence& seq, Draw& draw, std::string& how) {
  if (seq.ops.size() < 2) return;
  const std::size_t at = draw.below(seq.ops.size());
  how += "remove " + std::to_string(at + 1) + " (" + std::string(seq.ops[at].name()) + ")";
  seq.ops.erase(seq.ops.begin() + static_cast<std::ptrdiff_t>(at));
}

void splice(Sequence& seq, const Sequence& donor, Draw& draw, std::string& how) {
  if (donor.ops.empty() || donor.model != seq.model) return;
  const std::size_t cut = draw.below(seq.ops.size() + 1);
  const std::size_t from = draw.below(donor.ops.size());
  std::set<std::string> taken = namesIn(seq);
  // The donor's names are its own: a use of a name it did not introduce after `from` is dropped
  // by the repair, unless a name of the sequence's of that kind takes it.
  std::vector<Operation> tail(donor.ops.begin() + static_cast<std::ptrdiff_t>(from),
                              donor.ops.end());
  std::map<std::string, std::string> outside;
  for (const Operation& op : tail) {
    for (std::size_t i = 0; i < op.names.size(); ++i) {
      if (op.useOfName(i) == SlotUse::Introduce || outside.contains(op.names[i])) continue;
      const std::vector<std::string> options = introducedBefore(seq, cut, op.kindOfName(i));
      outside[op.names[i]] =
          options.empty() ? "?" + op.names[i] : options[draw.below(options.size())];
    }
  }
  tail = renamedApart(std::move(tail), seq.lifecycle(), taken, outside);
  seq.ops.resize(cut);
  seq.ops.insert(seq.ops.end(), tail.begin(), tail.end());
  how += "splice at " + std::to_string(cut + 1) + " from " + std::to_string(from + 1);
}

void repeatBlock(Sequence& seq, Draw& draw, std::string& how) {
  if (seq.ops.empty()) return;
  const std::size_t first = draw.below(seq.ops.size());
  const std::size_t count = 1 + draw.below(std::min<std::size_t>(4, seq.ops.size() - first));
  const std::size_t times = 1 + draw.below(3);
  std::set<std::string> taken = namesIn(seq);
  const std::vector<Operation> block(seq.ops.begin() + static_cast<std::ptrdiff_t>(first),
                                     seq.ops.begin() + static_cast<std::ptrdiff_t>(first + count));
  std::vector<Operation> copies;
  for (std::size_t t = 0; t < times; ++t) {
    const std::vector<Operation> copy = renamedApart(block, seq.lifecycle(), taken);
    copies.insert(copies.end(), copy.begin(), copy.end());
  }
  seq.ops.insert(seq.ops.begin() + static_cast<std::ptrdiff_t>(first + count), copies.begin(),
                 copies.end());
  how += "repeat " + std::to_string(first + 1) + ".." + std::to_string(first + count) + " x" +
         std::to_string(times);
}

void changeArgument(Sequence& seq, Draw& draw, std::string& how) {
  std::vector<std::size_t> withArgs;
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    if (!seq.ops[i].args.empty()) withArgs.push_back(i);
  }
  if (withArgs.empty()) return;
  Operation& op = seq.ops[withArgs[draw.below(withArgs.size())]];
  const std::size_t a = draw.below(op.args.size());
  const ArgDecl& decl = op.form->args[a];
  uint64_t value = 0;
  if (decl.isWord()) {
    value = draw.below(decl.words.size());
  } else if (draw.oneIn(16)) {
    const uint64_t span = decl.max - decl.min + 1;  // 0: the whole of uint64_t
    value = decl.min + (span == 0 ? draw.next() : draw.next() % span);
  } else {
    const std::vector<uint64_t> edges = edgeValues(decl.min, decl.max, decl.defaultValue);
    if (draw.oneIn(3)) {
      // The bounds, the default and the word sizes, each as likely however wide the range.
      std::vector<uint64_t> special;
      for (const uint64_t v : edges) {
        const bool word = v == (uint64_t{1} << 31U) || v == (uint64_t{1} << 32U) ||
                          v + 1 == (uint64_t{1} << 31U) || v + 1 == (uint64_t{1} << 32U);
        if (v == decl.min || v == decl.max || v == decl.defaultValue || word) special.push_back(v);
      }
      value = special[draw.below(special.size())];
    } else {
      // Small values first, as the generator prefers them: the least of two draws of an edge.
      value = edges[std::min(draw.below(edges.size()), draw.below(edges.size()))];
    }
  }
  op.args[a] = value;
  how += "arg " + decl.key + "=" + decl.valueText(value) + " at " +
         std::to_string(static_cast<std::size_t>(&op - seq.ops.data()) + 1);
}

/// Repeats a name's life: the operations from the one that introduced a name to the last that
/// mentions it or a name made from it, copied with new names right after them. A count a plan
/// or a runtime keeps per life (contexts destroyed with buffers alive, buffers freed with work
/// pending) goes up by one a copy, which a block of four contiguous operations rarely gives.
void repeatLife(Sequence& seq, Draw& draw, std::string& how) {
  std::vector<std::size_t> intros;
  for (std::size_t p = 0; p < seq.ops.size(); ++p) {
    const Operation& op = seq.ops[p];
    for (std::size_t i = 0; i < op.names.size(); ++i) {
      if (op.useOfName(i) == SlotUse::Introduce) {
        intros.push_back(p);
        break;
      }
    }
  }
  if (intros.empty()) return;
  const std::size_t first = intros[draw.below(intros.size())];
  // The family: the names the first operation introduces, then every name an operation
  // introduces while it mentions one of the family.
  std::set<std::string> family;
  std::vector<Operation> life;
  std::size_t last = first;
  for (std::size_t p = first; p < seq.ops.size(); ++p) {
    const Operation& op = seq.ops[p];
    bool mentions = p == first;
    for (const std::string& name : op.names)
      mentions = mentions || family.contains(name);
    if (!mentions) continue;
    for (std::size_t i = 0; i < op.names.size(); ++i) {
      if (op.useOfName(i) == SlotUse::Introduce) family.insert(op.names[i]);
    }
    life.push_back(op);
    last = p;
  }
  const std::size_t times = 1 + draw.below(2);
  std::set<std::string> taken = namesIn(seq);
  std::vector<Operation> copies;
  for (std::size_t t = 0; t < times; ++t) {
    const std::vector<Operation> copy = renamedApart(life, seq.lifecycle(), taken);
    copies.insert(copies.end(), copy.begin(), copy.end());
  }
  seq.ops.insert(seq.ops.begin() + static_cast<std::ptrdiff_t>(last + 1), copies.begin(),
                 copies.end());
  how += "repeat life of " + std::to_string(first + 1) + " (" + std::to_string(life.size()) +
         " ops) x" + std::to_string(times);
}

void moveThread(Sequence& seq, unsigned threads, Draw& draw, std::string& how) {
  if (threads < 2 || seq.ops.empty()) return;
  Operation& op = seq.ops[draw.below(seq.ops.size())];
  op.thread = static_cast<unsigned>(draw.below(threads));
  how += "to thread " + std::to_string(op.thread) + " at " +
         std::to_string(static_cast<std::size_t>(&op - seq.ops.data()) + 1);
}

void changeMark(Sequence& seq, const FailWords& inject, Draw& draw, std::string& how) {
  std::vector<std::size_t> markable;
  std::vector<std::size_t> marked;
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    if (seq.ops[i].mark) marked.push_back(i);
    for (const FailWord w : kFailWords) {
      if (inject.has(w) && seq.ops[i].form->fails.has(w)) {
        markable.push_back(i);
        break;
      }
    }
  }
  if (!marked.empty() && draw.oneIn(3)) {
    const std::size_t at = marked[draw.below(marked.size())];
    seq.ops[at].mark.reset();
    how += "unmark " + std::to_string(at + 1);
    return;
  }
  if (markable.empty()) return;
  const std::size_t at = markable[draw.below(markable.size())];
  std::vector<FailWord> words;
  for (const FailWord w : kFailWords) {
    if (inject.has(w) && seq.ops[at].form->fails.has(w)) words.push_back(w);
  }
  Mark mark{words[draw.below(words.size())], 1};
  if (draw.oneIn(3)) mark.nth = 1 + static_cast<uint32_t>(draw.below(4));
  seq.ops[at].mark = mark;
  how += "mark " + std::to_string(at + 1) + markText(mark);
}

}  // namespace

Sequence repaired(const Sequence& seq, uint32_t maxOps) {
  Sequence out = seq;
  out.ops.clear();
  ModelState state(seq.lifecycle());
  for (const Operation& op : seq.ops) {
    if (out.ops.size() >= maxOps) break;
    // A name the splice could not map ("?r3") is never alive: the operation goes.
    if (!state.check(op).ok()) continue;
    state.applyValid(op);
    out.ops.push_back(op);
  }
  return out;
}

std::vector<uint64_t> edgeValues(uint64_t min, uint64_t max, uint64_t defaultValue) {
  std::set<uint64_t> values;
  const auto add = [&](uint64_t v) {
    if (v >= min && v <= max) values.insert(v);
  };
  add(min);
  if (min < max) add(min + 1);
  add(defaultValue);
  for (unsigned k = 0; k < 64; ++k) {
    const uint64_t p = uint64_t{1} << k;
    if (p > max) break;
    add(p - 1);
    add(p);
    add(p + 1);
  }
  for (const uint64_t p : {uint64_t{1} << 31U, uint64_t{1} << 32U}) {
    add(p - 1);
    add(p);
    add(p + 1);
  }
  add(max);
  if (max > min) add(max - 1);
  return {values.begin(), values.end()};
}

Sequence mutate(const Sequence& parent, const Sequence& donor, const GeneratorConfig& config,
                uint64_t seed, std::string* how) {
  Draw draw(seed);
  const unsigned threads = std::max(parent.threadCount(), config.threads);
  std::string said;
  Sequence out = parent;
  // Tries until an edit changes the sequence; a repair may undo one.
  for (int attempt = 0; attempt < 8; ++attempt) {
    Sequence seq = parent;
    said.clear();
    const std::size_t edits = 1 + draw.below(draw.oneIn(2) ? 1 : 4);
    for (std::size_t e = 0; e < edits; ++e) {
      if (!said.empty()) said += "; ";
      // The edits in turn; marks only where --inject names words to mark.
      using EditFn = void (*)(Sequence&, const Sequence&, const GeneratorConfig&, unsigned, Draw&,
                              std::string&);
      static constexpr EditFn kEdits[] = {
          [](Sequence& s, const Sequence&, const GeneratorConfig& c, unsigned, Draw& d,
             std::string& h) { insertDrawn(s, c, d, h); },
          [](Sequence& s, const Sequence&, const GeneratorConfig& c, unsigned, Draw& d,
             std::string& h) { useName(s, c, d, h); },
          [](Sequence& s, const Sequence&, const GeneratorConfig&, unsigned, Draw& d,
             std::string& h) { removeOne(s, d, h); },
          [](Sequence& s, const Sequence& other, const GeneratorConfig&, unsigned, Draw& d,
             std::string& h) { splice(s, other, d, h); },
          [](Sequence& s, const Sequence&, const GeneratorConfig&, unsigned, Draw& d,
             std::string& h) { repeatBlock(s, d, h); },
          [](Sequence& s, const Sequence&, const GeneratorConfig&, unsigned, Draw& d,
             std::string& h) { repeatLife(s, d, h); },
          [](Sequence& s, const Sequence&, const GeneratorConfig&, unsigned, Draw& d,
             std::string& h) { changeArgument(s, d, h); },
          [](Sequence& s, const Sequence&, const GeneratorConfig&, unsigned t, Draw& d,
             std::string& h) { moveThread(s, t, d, h); },
          [](Sequence& s, const Sequence&, const GeneratorConfig& c, unsigned, Draw& d,
             std::string& h) { changeMark(s, c.inject, d, h); },
      };
      const std::size_t kinds = std::size(kEdits) - (config.inject.empty() ? 1 : 0);
      kEdits[draw.below(kinds)](seq, donor, config, threads, draw, said);
    }
    out = renumbered(repaired(seq, config.maxOps));
    out.directives = parent.directives;
    if (!out.ops.empty() && out.ops != parent.ops) break;
  }
  if (out.ops.empty()) out = parent;
  if (how) *how = said;
  return out;
}

}  // namespace gpufuzz
