// SequenceEdits.cpp: removals, simplifications and insertions that keep a sequence valid.
#include "model/SequenceEdits.h"

#include <algorithm>
#include <set>

#include "model/ReferenceModel.h"

namespace gpufuzz {

namespace {

/// The names an operation introduces.
std::vector<std::string> introduced(const Operation& op) {
  switch (op.kind) {
    case OpKind::Create:
    case OpKind::CtxCreate:
      return {op.names[0]};
    case OpKind::BufCreate:
      return {op.names[1]};
    default:
      return {};
  }
}

struct ArgumentSpec {
  std::string name;
  uint64_t min, def, max;
};

std::vector<ArgumentSpec> specsOf(OpKind kind) {
  using B = ArgBounds;
  switch (kind) {
    case OpKind::Create:
      return {{"width", B::kMinSize, B::kDefaultSize, B::kMaxSize},
              {"height", B::kMinSize, B::kDefaultSize, B::kMaxSize}};
    case OpKind::Draw:
      return {{"triangles", B::kMinTriangles, B::kDefaultTriangles, B::kMaxTriangles},
              {"seed", 0, 0, UINT32_MAX}};
    case OpKind::SetTextures:
      return {{"count", B::kMinCount, B::kDefaultCount, B::kMaxCount},
              {"size", B::kMinTexSize, B::kDefaultTexSize, B::kMaxTexSize},
              {"seed", 0, 0, UINT32_MAX}};
    case OpKind::BufCreate:
      return {{"bytes", B::kMinBytes, B::kDefaultBytes, B::kMaxBytes}};
    default:
      return {};
  }
}

std::optional<ArgumentSpec> specOf(const Operation& op, const std::string& argument) {
  for (const ArgumentSpec& s : specsOf(op.kind)) {
    if (s.name == argument) return s;
  }
  return std::nullopt;
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

std::vector<std::pair<std::string, uint64_t>> argumentsOf(const Operation& op) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const ArgumentSpec& s : specsOf(op.kind)) {
    uint64_t value = 0;
    if (s.name == "width") value = op.width;
    if (s.name == "height") value = op.height;
    if (s.name == "triangles") value = op.triangles;
    if (s.name == "seed") value = op.seed;
    if (s.name == "count") value = op.count;
    if (s.name == "size") value = op.size;
    if (s.name == "bytes") value = op.bytes;
    out.emplace_back(s.name, value);
  }
  return out;
}

bool setArgument(Operation& op, const std::string& argument, uint64_t value) {
  const auto spec = specOf(op, argument);
  if (!spec || value < spec->min || value > spec->max) return false;
  const auto v32 = static_cast<uint32_t>(value);
  if (argument == "width") op.width = v32;
  if (argument == "height") op.height = v32;
  if (argument == "triangles") op.triangles = v32;
  if (argument == "seed") op.seed = v32;
  if (argument == "count") op.count = v32;
  if (argument == "size") op.size = v32;
  if (argument == "bytes") op.bytes = value;
  return true;
}

std::vector<uint64_t> simplerValues(const Operation& op, const std::string& argument) {
  const auto spec = specOf(op, argument);
  if (!spec) return {};
  uint64_t current = 0;
  for (const auto& [name, value] : argumentsOf(op)) {
    if (name == argument) current = value;
  }
  // Defaults are simplest (they vanish from the text); below that, smaller is simpler. This order
  // is well founded, so repeated simplification ends.
  if (current == spec->def) return {};
  std::vector<uint64_t> out = {spec->def};
  for (uint64_t v : {spec->min, spec->min + (current - spec->min) / 2, current - 1}) {
    if (v < current && v != spec->def && std::find(out.begin(), out.end(), v) == out.end()) {
      out.push_back(v);
    }
  }
  return out;
}

std::vector<uint64_t> probeValues(const Operation& op, const std::string& argument) {
  const auto spec = specOf(op, argument);
  if (!spec) return {};
  uint64_t current = 0;
  for (const auto& [name, value] : argumentsOf(op)) {
    if (name == argument) current = value;
  }
  std::vector<uint64_t> out;
  const uint64_t mid = spec->min + (spec->max - spec->min) / 3;
  for (uint64_t v : {spec->min, spec->def, mid, spec->min + 1, spec->max}) {
    if (v != current && v >= spec->min && v <= spec->max &&
        std::find(out.begin(), out.end(), v) == out.end()) {
      out.push_back(v);
    }
  }
  return out;
}

std::vector<std::pair<Edit, Sequence>> shrinkCandidates(const Sequence& seq) {
  std::vector<std::pair<Edit, Sequence>> removals;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    Sequence candidate = removeOperation(seq, i);
    if (!isValid(candidate) || !seen.insert(normalizedOperations(candidate)).second) continue;
    removals.emplace_back(Edit{Edit::Kind::Remove, i, {}, 0, {}}, std::move(candidate));
  }
  std::stable_sort(removals.begin(), removals.end(), [](const auto& a, const auto& b) {
    return a.second.ops.size() < b.second.ops.size();
  });
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    for (const auto& [name, value] : argumentsOf(seq.ops[i])) {
      for (uint64_t simpler : simplerValues(seq.ops[i], name)) {
        Sequence candidate = seq;
        setArgument(candidate.ops[i], name, simpler);
        removals.emplace_back(Edit{Edit::Kind::Simplify, i, name, simpler, {}},
                              std::move(candidate));
      }
    }
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

}  // namespace gpufuzz
