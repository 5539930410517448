// NormalizedModel.cpp: the normalized facts of a lifecycle model, one fact a line.
#include "model/NormalizedModel.h"

namespace gpufuzz {

namespace {

std::string_view modeWord(SlotUse use) {
  switch (use) {
    case SlotUse::Use:
      return "use";
    case SlotUse::End:
      return "end";
    case SlotUse::List:
      return "list";
    case SlotUse::Introduce:
      return "new";
  }
  return "use";
}

std::string argFact(const OpDecl& op, const ArgDecl& a) {
  std::string out = "arg " + op.name + " " + a.key;
  if (!a.isWord()) {
    return out + " int " + std::to_string(a.defaultValue) + " " + std::to_string(a.min) + " " +
           std::to_string(a.max) + "\n";
  }
  out += " word " + a.words[a.defaultValue];
  for (const std::string& w : a.words)
    out += " " + w;
  return out + "\n";
}

}  // namespace

std::string normalizedModel(const LifecycleModel& model) {
  std::string out = std::string(kModelFactsHeader) + "\n";
  out += "model " + model.name + " " + model.hash + "\n";
  if (!model.note.empty()) out += "note " + model.note + "\n";
  for (const ResourceDecl& r : model.resources)
    out += "resource " + r.kind + " " + r.prefix + "\n";
  // Owners after every kind: a kind may be owned by one declared after it.
  for (const ResourceDecl& r : model.resources) {
    if (r.owner) out += "owner " + r.kind + " " + model.resources[*r.owner].kind + "\n";
  }
  for (const OpDecl& op : model.ops) {
    out += "op " + op.name + "\n";
    out += "weight " + op.name + " " + std::to_string(op.weight) + "\n";
    for (const SlotDecl& s : op.slots) {
      out += "slot " + op.name + " " + model.resources[s.kind].kind + " " +
             std::string(modeWord(s.use)) + "\n";
    }
    for (const ArgDecl& a : op.args)
      out += argFact(op, a);
    if (!op.fails.empty()) {
      std::string words = op.fails.text();
      for (char& c : words) {
        if (c == '|') c = ' ';
      }
      out += "fails " + op.name + " " + words + "\n";
    }
    for (const EffectDecl& e : op.effects) {
      const ResourceDecl& r = model.resources[e.kind];
      out += "effect " + op.name + (e.set ? " set " : " clear ") + r.flags[e.flag] + " " + r.kind +
             "\n";
    }
  }
  for (const std::size_t k : model.release) {
    out += "release " + model.resources[k].kind;
    if (const OpDecl* op = model.defaultRelease(k)) out += " " + op->name;
    out += "\n";
  }
  return out;
}

std::string modelFactsPath(std::string_view modelPath) {
  constexpr std::string_view kSuffix = ".model";
  if (modelPath.ends_with(kSuffix)) modelPath.remove_suffix(kSuffix.size());
  return std::string(modelPath) + ".facts";
}

}  // namespace gpufuzz
