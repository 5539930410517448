// ModelFacts.cpp: the lifecycle roles of a sequence's steps, from its model's state.
#include "model/ModelFacts.h"

#include <algorithm>
#include <set>

#include "model/ModelState.h"

namespace gpufuzz {

namespace {

std::string joined(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i)
    out += (i == 0 ? "" : separator) + parts[i];
  return out;
}

/// The flags a name holds now, by name: {"pending"}.
std::vector<std::string> flagsOf(const ModelState& state, std::size_t name) {
  const ResourceDecl& r = state.model().resources[state.names()[name].kind];
  std::vector<std::string> out;
  for (std::size_t f = 0; f < r.flags.size(); ++f) {
    if (state.flag(name, f)) out.push_back(r.flags[f]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// The live names an owner owns now, grouped by kind: {"buf" -> {"b0", "b1"}}.
std::vector<std::pair<std::string, std::vector<std::string>>> ownedAlive(const ModelState& state,
                                                                         std::size_t owner) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const ModelState::Name& n : state.names()) {
    if (!n.alive || n.owner != owner) continue;
    const std::string& kind = state.model().resources[n.kind].kind;
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == kind; });
    if (it == out.end()) it = out.insert(out.end(), {kind, {}});
    it->second.push_back(n.name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

ModelStep stepFacts(const ModelState& state, const Operation& op) {
  const LifecycleModel& model = state.model();
  std::vector<std::string> roles, texts;
  for (std::size_t i = 0; i < op.names.size(); ++i) {
    const std::string& kind = model.resources[op.kindOfName(i)].kind;
    const std::string& name = op.names[i];
    const SlotUse use = op.useOfName(i);
    if (use == SlotUse::Introduce) {
      roles.push_back("introduces-" + kind);
      texts.push_back("introduces " + kind + " " + name);
      continue;
    }
    const std::size_t at = static_cast<std::size_t>(state.find(name) - state.names().data());
    const std::vector<std::string> flags = flagsOf(state, at);
    std::string role = (use == SlotUse::End ? "ends-" : "uses-") + kind;
    std::string text = (use == SlotUse::End ? "ends " : "uses ") + kind + " " + name;
    std::vector<std::string> whiles;
    for (const std::string& f : flags) {
      role += "-" + f;
      whiles.push_back(name + " is " + f);
    }
    if (use == SlotUse::End) {
      for (const auto& [ownedKind, names] : ownedAlive(state, at)) {
        role += "-owning-" + ownedKind;
        whiles.push_back(std::to_string(names.size()) + " " + ownedKind + " of it " +
                         (names.size() == 1 ? "is" : "are") + " alive (" + joined(names, ", ") +
                         ")");
      }
    }
    if (!whiles.empty()) text += " while " + joined(whiles, " and ");
    // A plain use is the ordinary case: only uses that see a flag say something.
    if (use == SlotUse::End || !flags.empty()) roles.push_back(role);
    texts.push_back(text);
  }
  for (const EffectDecl& e : op.form->effects) {
    const ResourceDecl& r = model.resources[e.kind];
    const std::string& name = op.names[nameIndexOfSlot(*op.form, e.slot, op.names.size())];
    roles.push_back(std::string(e.set ? "sets-" : "clears-") + r.flags[e.flag] + "-" + r.kind);
    texts.push_back(std::string(e.set ? "sets " : "clears ") + r.flags[e.flag] + " on " + name);
  }
  if (roles.empty()) roles.push_back("uses-" + std::string(op.name()));
  return {joined(roles, "+"), texts.empty() ? std::string(op.name()) : joined(texts, ", ")};
}

}  // namespace

std::vector<ModelStep> modelFacts(const Sequence& seq) {
  ModelState state(seq.lifecycle());
  std::vector<ModelStep> out;
  out.reserve(seq.ops.size());
  for (const Operation& op : seq.ops) {
    out.push_back(stepFacts(state, op));
    state.applyValid(op);
  }
  return out;
}

}  // namespace gpufuzz
