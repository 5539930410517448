// SequenceEdits.cpp: removals, simplifications and insertions that keep a sequence valid.
#include "model/SequenceEdits.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "model/ReferenceModel.h"

namespace gpufuzz {

namespace {

/// The names an operation introduces.
std::vector<std::string> introduced(const Operation& op) {
  std::vector<std::string> out;
  const auto slots = opForm(op.kind).names;
  for (std::size_t i = 0; i < slots.size() && i < op.names.size(); ++i) {
    if (slots[i].introduces) out.push_back(op.names[i]);
  }
  return out;
}

const ArgSpec* specOf(const Operation& op, const std::string& argument) {
  return opForm(op.kind).arg(argument);
}

bool releases(OpKind kind) {
  return kind == OpKind::Destroy || kind == OpKind::CtxDestroy || kind == OpKind::BufDestroy;
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
  }
  return {};
}

bool isValid(const Sequence& seq) {
  ReferenceModel model;
  for (const Operation& op : seq.ops) {
    if (!model.precondition(op).empty()) return false;
    model.apply(op);
  }
  return true;
}

std::vector<std::size_t> removalSet(const Sequence& seq, std::size_t index) {
  std::set<std::string> dead;
  std::vector<std::size_t> removed = {index};
  for (const std::string& n : introduced(seq.ops[index]))
    dead.insert(n);
  for (std::size_t i = index + 1; i < seq.ops.size(); ++i) {
    const Operation& op = seq.ops[i];
    const bool touchesDead = std::any_of(op.names.begin(), op.names.end(),
                                         [&](const std::string& n) { return dead.count(n) > 0; });
    if (!touchesDead) continue;
    removed.push_back(i);
    for (const std::string& n : introduced(op))
      dead.insert(n);
  }
  return removed;
}

Sequence removeOperation(const Sequence& seq, std::size_t index) {
  const std::vector<std::size_t> removed = removalSet(seq, index);
  Sequence out;
  out.directives = seq.directives;
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    if (std::find(removed.begin(), removed.end(), i) == removed.end())
      out.ops.push_back(seq.ops[i]);
  }
  return out;
}

std::optional<Sequence> removeRange(const Sequence& seq, std::size_t first, std::size_t count) {
  // One pass: what the range introduces dies, and so does every later operation on a dead name
  // (with what it introduces), as removeOperation does for one.
  const std::size_t end = std::min(seq.ops.size(), first + count);
  std::set<std::string> dead;
  Sequence out;
  out.directives = seq.directives;
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    const Operation& op = seq.ops[i];
    const bool gone = (i >= first && i < end) ||
                      std::any_of(op.names.begin(), op.names.end(),
                                  [&](const std::string& n) { return dead.count(n) > 0; });
    if (!gone) {
      out.ops.push_back(op);
      continue;
    }
    for (const std::string& n : introduced(op))
      dead.insert(n);
  }
  if (out.ops.size() == seq.ops.size() || !isValid(out)) return std::nullopt;
  return out;
}

std::vector<std::pair<std::string, uint64_t>> argumentsOf(const Operation& op) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const ArgSpec& spec : opForm(op.kind).args)
    out.emplace_back(spec.key, spec.get(op));
  return out;
}

bool setArgument(Operation& op, const std::string& argument, uint64_t value) {
  const ArgSpec* spec = specOf(op, argument);
  if (spec == nullptr || value < spec->min || value > spec->max) return false;
  spec->set(op, value);
  return true;
}

std::vector<uint64_t> simplerValues(const Operation& op, const std::string& argument) {
  const ArgSpec* spec = specOf(op, argument);
  if (spec == nullptr) return {};
  const uint64_t current = spec->get(op);
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
  const ArgSpec* spec = specOf(op, argument);
  if (spec == nullptr) return {};
  const uint64_t current = spec->get(op);
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
  Sequence out;
  out.directives = seq.directives;
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    const Operation& op = seq.ops[i];
    const bool uses = std::find(op.names.begin(), op.names.end(), name) != op.names.end();
    if (i == index || (uses && releases(op.kind))) continue;
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
  std::vector<std::pair<Edit, Sequence>> merges;
  for (std::size_t j = 0; j < seq.ops.size(); ++j) {
    const auto slots = opForm(seq.ops[j].kind).names;
    for (std::size_t s = 0; s < slots.size() && s < seq.ops[j].names.size(); ++s) {
      if (!slots[s].introduces) continue;
      const std::string& name = seq.ops[j].names[s];
      std::set<std::string> earlier;  // introduced before j, of the same kind
      for (std::size_t i = 0; i < j; ++i) {
        const auto other = opForm(seq.ops[i].kind).names;
        for (std::size_t t = 0; t < other.size() && t < seq.ops[i].names.size(); ++t) {
          if (other[t].introduces && other[t].kind == slots[s].kind)
            earlier.insert(seq.ops[i].names[t]);
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
    for (const ArgSpec& spec : opForm(seq.ops[i].kind).args) {
      const std::string name(spec.key);
      for (uint64_t simpler : simplerValues(seq.ops[i], name)) {
        Sequence candidate = seq;
        setArgument(candidate.ops[i], name, simpler);
        removals.emplace_back(Edit{Edit::Kind::Simplify, i, name, simpler, {}, {}},
                              std::move(candidate));
      }
    }
  }
  // Toward the canonical order: a later operation on an earlier-introduced name moves up. Ranks
  // never change under these swaps (two introductions are never out of order), so each accepted
  // swap removes an inversion for good.
  const auto ranks = introductionRanks(seq);
  const auto rank = [&](const Operation& op) { return ranks.at(op.names.front()); };
  for (std::size_t i = 0; i + 1 < seq.ops.size(); ++i) {
    if (rank(seq.ops[i + 1]) >= rank(seq.ops[i])) continue;
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
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const std::string prefix = "p" + std::to_string(p) + "_";
    // Alive at the part's end, by kind (NameKind order), in creation order.
    std::array<std::vector<std::string>, 3> alive;
    for (Operation op : renumbered(parts[p]).ops) {
      const OpForm& form = opForm(op.kind);
      for (std::size_t i = 0; i < op.names.size() && i < form.names.size(); ++i) {
        op.names[i] = prefix + op.names[i];
        if (form.names[i].introduces) {
          alive[static_cast<std::size_t>(form.names[i].kind)].push_back(op.names[i]);
        }
      }
      const auto release = [&](NameKind kind) {
        auto& names = alive[static_cast<std::size_t>(kind)];
        names.erase(std::remove(names.begin(), names.end(), op.names.front()), names.end());
      };
      if (op.kind == OpKind::Destroy) release(NameKind::Renderer);
      if (op.kind == OpKind::BufDestroy) release(NameKind::Buffer);
      if (op.kind == OpKind::CtxDestroy) release(NameKind::Context);
      op.line = 0;
      whole.ops.push_back(std::move(op));
    }
    if (p + 1 == parts.size()) break;
    const std::array<std::pair<NameKind, OpKind>, 3> releases{
        {{NameKind::Renderer, OpKind::Destroy},
         {NameKind::Buffer, OpKind::BufDestroy},
         {NameKind::Context, OpKind::CtxDestroy}}};
    for (const auto& [kind, releaseOp] : releases) {
      for (const std::string& name : alive[static_cast<std::size_t>(kind)]) {
        Operation op;
        op.kind = releaseOp;
        op.names = {name};
        whole.ops.push_back(std::move(op));
      }
    }
  }
  return renumbered(whole);
}

}  // namespace gpufuzz
