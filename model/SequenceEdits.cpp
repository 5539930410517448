// SequenceEdits.cpp: removals, simplifications and insertions that keep a sequence valid.
#include "model/SequenceEdits.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <tuple>

#include "model/ModelState.h"

namespace gpufuzz {

namespace {

std::vector<std::string> introduced(const Operation& op) {
  return introducedNames(op);
}

const ArgDecl* specOf(const Operation& op, const std::string& argument) {
  return op.form->arg(argument);
}

/// Whether `op` ends `name`.
bool ends(const Operation& op, const std::string& name) {
  for (std::size_t i = 0; i < op.names.size(); ++i) {
    if (op.names[i] == name && op.useOfName(i) == SlotUse::End) return true;
  }
  return false;
}

/// The sequence's directives and model, without operations.
Sequence emptied(const Sequence& seq) {
  Sequence out;
  out.directives = seq.directives;
  out.model = seq.model;
  return out;
}

/// Each name's rank in order of introduction: the canonical order groups operations by it.
std::map<std::string, std::size_t> introductionRanks(const Sequence& seq) {
  std::map<std::string, std::size_t> ranks;
  for (const Operation& op : seq.ops) {
    for (const std::string& n : introduced(op))
      ranks.try_emplace(n, ranks.size());
  }
  return ranks;
}

std::string ordinalText(std::size_t index, const Sequence& seq) {
  return std::to_string(index + 1) + " (" + operationText(seq.ops[index]) + ")";
}

/// Fewer threads, then lower thread numbers: all on thread 0; each thread merged into thread 0
/// and into the thread before it; each operation moved to thread 0.
std::vector<std::pair<Edit, Sequence>> threadCandidates(const Sequence& seq,
                                                        std::set<std::string>& seen) {
  std::vector<std::pair<Edit, Sequence>> out;
  const unsigned threads = seq.threadCount();
  if (threads < 2) return out;
  const auto offer = [&](Edit edit, Sequence candidate) {
    if (seen.insert(normalizedOperations(candidate)).second)
      out.emplace_back(std::move(edit), std::move(candidate));
  };
  offer(Edit{Edit::Kind::OneThread, 0, {}, 0, {}, {}}, onOneThread(seq));
  for (unsigned t = threads - 1; t >= 1; --t) {
    for (const unsigned into : {0U, t - 1}) {
      Sequence candidate = seq;
      for (Operation& op : candidate.ops) {
        if (op.thread == t) op.thread = into;
      }
      offer(Edit{Edit::Kind::MergeThreads, t, {}, into, {}, {}}, std::move(candidate));
    }
  }
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    if (seq.ops[i].thread == 0) continue;
    Sequence candidate = seq;
    candidate.ops[i].thread = 0;
    offer(Edit{Edit::Kind::ToThreadZero, i, {}, 0, {}, {}}, std::move(candidate));
  }
  return out;
}

}  // namespace

std::string Edit::describe(const Sequence& before) const {
  switch (kind) {
    case Kind::Remove:
      return "remove " + ordinalText(index, before);
    case Kind::Simplify:
      return argument + "=" + std::to_string(value) + " at " + ordinalText(index, before);
    case Kind::Insert:
      return "insert `" + operationText(inserted) + "` " +
             (index < before.ops.size() ? "before " + ordinalText(index, before) : "at the end");
    case Kind::Merge:
      return "use " + into + " for " + argument + " (drops " + ordinalText(index, before) + ")";
    case Kind::Swap:
      return "swap " + ordinalText(index, before) + " and " + ordinalText(index + 1, before);
    case Kind::RemoveRange:
      return "remove " + std::to_string(value) + " operations from " + ordinalText(index, before);
    case Kind::OneThread:
      return "every operation on thread 0";
    case Kind::MergeThreads:
      return "thread " + std::to_string(index) + " into thread " + std::to_string(value);
    case Kind::ToThreadZero:
      return "move " + ordinalText(index, before) + " to thread 0";
    case Kind::Unmark:
      return "unmark " + ordinalText(index, before);
    case Kind::MarkNth:
      return "@" + std::to_string(value) + " at " + ordinalText(index, before);
  }
  return {};
}

bool isValid(const Sequence& seq) {
  ModelState model(seq.lifecycle());
  for (const Operation& op : seq.ops) {
    if (!model.check(op).ok()) return false;
    model.applyValid(op);
  }
  return true;
}

namespace {

/// Whether every dead name `op` holds sits in its list slot: then `op` stays, without them.
bool deadOnlyInList(const Operation& op, const std::set<std::string>& dead) {
  const std::optional<std::size_t> list = op.form->listSlot();
  for (std::size_t i = 0; i < op.names.size(); ++i) {
    if (dead.count(op.names[i]) == 0) continue;
    if (!list || op.form->slotOfName(i, op.names.size()) != *list) return false;
  }
  return true;
}

/// `seq` without operations [first, end), what they introduce, and every later operation on a
/// dead name with what it introduces. A later operation that holds dead names only in its list
/// slot (a wait list, say) stays, without them. `removed` receives the indices taken out.
Sequence withoutRange(const Sequence& seq, std::size_t first, std::size_t end,
                      std::vector<std::size_t>* removed = nullptr) {
  std::set<std::string> dead;
  Sequence out = emptied(seq);
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    const Operation& op = seq.ops[i];
    const bool touches = std::any_of(op.names.begin(), op.names.end(),
                                     [&](const std::string& n) { return dead.count(n) > 0; });
    const bool gone = (i >= first && i < end) || (touches && !deadOnlyInList(op, dead));
    if (gone) {
      if (removed != nullptr) removed->push_back(i);
      for (const std::string& n : introduced(op))
        dead.insert(n);
      continue;
    }
    out.ops.push_back(op);
    if (!touches) continue;
    std::vector<std::string>& names = out.ops.back().names;
    names.erase(std::remove_if(names.begin(), names.end(),
                               [&](const std::string& n) { return dead.count(n) > 0; }),
                names.end());
  }
  return out;
}

}  // namespace

std::vector<std::size_t> removalSet(const Sequence& seq, std::size_t index) {
  std::vector<std::size_t> removed;
  (void)withoutRange(seq, index, index + 1, &removed);
  return removed;
}

Sequence removeOperation(const Sequence& seq, std::size_t index) {
  return withoutRange(seq, index, index + 1);
}

std::optional<Sequence> removeRange(const Sequence& seq, std::size_t first, std::size_t count) {
  Sequence out = withoutRange(seq, first, std::min(seq.ops.size(), first + count));
  if (out.ops.size() == seq.ops.size() || !isValid(out)) return std::nullopt;
  return out;
}

std::vector<std::pair<std::string, uint64_t>> argumentsOf(const Operation& op) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (std::size_t i = 0; i < op.form->args.size() && i < op.args.size(); ++i)
    out.emplace_back(op.form->args[i].key, op.args[i]);
  return out;
}

bool setArgument(Operation& op, const std::string& argument, uint64_t value) {
  const std::optional<std::size_t> i = op.form->argIndex(argument);
  if (!i || value < op.form->args[*i].min || value > op.form->args[*i].max) return false;
  op.args[*i] = value;
  return true;
}

std::vector<uint64_t> simplerValues(const Operation& op, const std::string& argument) {
  const ArgDecl* spec = specOf(op, argument);
  if (spec == nullptr) return {};
  const uint64_t current = op.arg(argument);
  // Defaults are simplest (they vanish from the text); below that, smaller is simpler. This order
  // is well founded, so repeated simplification ends.
  if (current == spec->defaultValue) return {};
  std::vector<uint64_t> out = {spec->defaultValue};
  for (uint64_t v : {spec->min, spec->min + (current - spec->min) / 2, current - 1}) {
    if (v < current && v != spec->defaultValue &&
        std::find(out.begin(), out.end(), v) == out.end()) {
      out.push_back(v);
    }
  }
  return out;
}

std::vector<uint64_t> probeValues(const Operation& op, const std::string& argument) {
  const ArgDecl* spec = specOf(op, argument);
  if (spec == nullptr) return {};
  const uint64_t current = op.arg(argument);
  std::vector<uint64_t> out;
  const uint64_t mid = spec->min + (spec->max - spec->min) / 3;
  for (uint64_t v : {spec->min, spec->defaultValue, mid, spec->min + 1, spec->max}) {
    if (v != current && v >= spec->min && v <= spec->max &&
        std::find(out.begin(), out.end(), v) == out.end()) {
      out.push_back(v);
    }
  }
  return out;
}

std::optional<Sequence> mergeName(const Sequence& seq, std::size_t index, const std::string& name,
                                  const std::string& into) {
  Sequence out = emptied(seq);
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    const Operation& op = seq.ops[i];
    const bool uses = std::find(op.names.begin(), op.names.end(), name) != op.names.end();
    if (i == index || (uses && ends(op, name))) continue;
    out.ops.push_back(op);
    for (std::string& n : out.ops.back().names) {
      if (n == name) n = into;
    }
  }
  if (!isValid(out)) return std::nullopt;
  return out;
}

std::vector<std::pair<Edit, Sequence>> shrinkCandidates(const Sequence& seq) {
  std::vector<std::pair<Edit, Sequence>> removals;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    Sequence candidate = removeOperation(seq, i);
    if (!isValid(candidate) || !seen.insert(normalizedOperations(candidate)).second) continue;
    removals.emplace_back(Edit{Edit::Kind::Remove, i, {}, 0, {}, {}}, std::move(candidate));
  }
  std::stable_sort(removals.begin(), removals.end(), [](const auto& a, const auto& b) {
    return a.second.ops.size() < b.second.ops.size();
  });
  for (auto& t : threadCandidates(seq, seen))
    removals.push_back(std::move(t));
  std::vector<std::pair<Edit, Sequence>> merges;
  for (std::size_t j = 0; j < seq.ops.size(); ++j) {
    const Operation& op = seq.ops[j];
    for (std::size_t s = 0; s < op.names.size(); ++s) {
      if (op.useOfName(s) != SlotUse::Introduce) continue;
      const std::string& name = op.names[s];
      const std::size_t kind = op.kindOfName(s);
      std::set<std::string> earlier;  // introduced before j, of the same kind
      for (std::size_t i = 0; i < j; ++i) {
        const Operation& other = seq.ops[i];
        for (std::size_t t = 0; t < other.names.size(); ++t) {
          if (other.useOfName(t) == SlotUse::Introduce && other.kindOfName(t) == kind)
            earlier.insert(other.names[t]);
        }
      }
      for (const std::string& into : earlier) {
        auto candidate = mergeName(seq, j, name, into);
        if (!candidate || !seen.insert(normalizedOperations(*candidate)).second) continue;
        merges.emplace_back(Edit{Edit::Kind::Merge, j, name, 0, {}, into}, std::move(*candidate));
      }
    }
  }
  std::stable_sort(merges.begin(), merges.end(), [](const auto& a, const auto& b) {
    return a.second.ops.size() < b.second.ops.size();
  });
  for (auto& m : merges)
    removals.push_back(std::move(m));
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    for (const ArgDecl& spec : seq.ops[i].form->args) {
      const std::string name(spec.key);
      for (uint64_t simpler : simplerValues(seq.ops[i], name)) {
        Sequence candidate = seq;
        setArgument(candidate.ops[i], name, simpler);
        removals.emplace_back(Edit{Edit::Kind::Simplify, i, name, simpler, {}, {}},
                              std::move(candidate));
      }
    }
  }
  // A mark goes, or counts to an earlier call: the first, then halfway (docs/failures.md).
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    const std::optional<Mark>& mark = seq.ops[i].mark;
    if (!mark) continue;
    Sequence unmarked = seq;
    unmarked.ops[i].mark.reset();
    removals.emplace_back(Edit{Edit::Kind::Unmark, i, {}, 0, {}, {}}, std::move(unmarked));
    std::set<uint32_t> lower;
    for (const uint32_t n : {1U, mark->nth / 2}) {
      if (n >= 1 && n < mark->nth) lower.insert(n);
    }
    for (const uint32_t n : lower) {
      Sequence earlier = seq;
      earlier.ops[i].mark->nth = n;
      removals.emplace_back(Edit{Edit::Kind::MarkNth, i, {}, n, {}, {}}, std::move(earlier));
    }
  }
  // Toward the canonical order: a later operation on an earlier-introduced name moves up. Ranks
  // never change under these swaps (two introductions are never out of order), so each accepted
  // swap removes an inversion for good. Operations on the same first name are ordered by their
  // other names' ranks, then by operation and arguments: two minimal sequences that differ only
  // in the place of an order-free step become one text, and one cause (search/Cause.h).
  const auto ranks = introductionRanks(seq);
  const auto key = [&](const Operation& op) {
    std::vector<std::size_t> named;
    for (const std::string& n : op.names) {
      const auto it = ranks.find(n);
      named.push_back(it == ranks.end() ? ranks.size() : it->second);
    }
    return std::tuple(named, op.name(), op.args);
  };
  for (std::size_t i = 0; i + 1 < seq.ops.size(); ++i) {
    const Operation &a = seq.ops[i], &b = seq.ops[i + 1];
    if (a.names.empty() || b.names.empty()) continue;
    if (key(b) >= key(a)) continue;
    Sequence candidate = seq;
    std::swap(candidate.ops[i], candidate.ops[i + 1]);
    if (!isValid(candidate) || !seen.insert(normalizedOperations(candidate)).second) continue;
    removals.emplace_back(Edit{Edit::Kind::Swap, i, {}, 0, {}, {}}, std::move(candidate));
  }
  return removals;
}

std::optional<Sequence> insertOperation(const Sequence& seq, std::size_t position,
                                        const Operation& op) {
  Sequence out = seq;
  out.ops.insert(out.ops.begin() + static_cast<std::ptrdiff_t>(std::min(position, seq.ops.size())),
                 op);
  if (!isValid(out)) return std::nullopt;
  return out;
}

Sequence concatenate(const std::vector<Sequence>& parts) {
  Sequence whole;
  if (!parts.empty()) whole.model = parts.front().model;
  const LifecycleModel& model = whole.lifecycle();
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const std::string prefix = "p" + std::to_string(p) + "_";
    ModelState state(model);
    for (Operation op : renumbered(parts[p]).ops) {
      for (std::string& n : op.names)
        n = prefix + n;
      op.line = 0;
      state.applyValid(op);
      whole.ops.push_back(std::move(op));
    }
    if (p + 1 == parts.size()) break;
    // What the part leaves alive is released as the model orders leftovers: kind by kind, each
    // in creation order, by the kind's default release (a kind without one stays alive).
    for (const std::size_t kind : model.release) {
      const OpDecl* release = model.defaultRelease(kind);
      if (!release) continue;
      for (const std::size_t i : std::vector<std::size_t>(state.alive(kind))) {
        Operation op;
        op.form = release;
        op.names = {state.names()[i].name};
        for (const ArgDecl& a : release->args)
          op.args.push_back(a.defaultValue);
        state.applyValid(op);
        whole.ops.push_back(std::move(op));
      }
    }
  }
  return renumbered(whole);
}

}  // namespace gpufuzz
