// ModelState.cpp: liveness, owners and flags of any lifecycle model.
#include "model/ModelState.h"

#include <algorithm>
#include <stdexcept>

namespace gpufuzz {

namespace {

std::string article(std::string_view word) {
  return (std::string_view("aeiou").find(word.front()) != std::string_view::npos ? "an " : "a ") +
         std::string(word);
}

}  // namespace

std::size_t nameIndexOfSlot(const OpDecl& op, std::size_t slot, std::size_t names) {
  const std::optional<std::size_t> list = op.listSlot();
  if (!list || slot < *list) return slot;
  const std::size_t listed = names + 1 - op.slots.size();
  return slot + listed - 1;
}

ModelState::ModelState(const LifecycleModel& model)
    : model_(&model), alive_(model.resources.size()) {}

const OpDecl& ModelState::declOf(const Operation& op) const {
  const OpDecl* own = op.form;
  if (own == nullptr || own->index >= model_->ops.size() || &model_->ops[own->index] != own) {
    own = op.form ? model_->op(op.form->name) : nullptr;
  }
  if (own == nullptr) throw std::invalid_argument("operation not in model " + model_->name);
  return *own;
}

const ModelState::Name* ModelState::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &names_[it->second];
}

std::size_t ModelState::aliveOwnedBy(std::size_t owner) const {
  std::size_t n = 0;
  for (const Name& x : names_)
    n += x.alive && x.owner == owner ? 1 : 0;
  return n;
}

ModelState::Verdict ModelState::check(const Operation& op) const {
  if (op.form == nullptr || model_->op(op.form->name) == nullptr) {
    return {"operation " + std::string(op.form ? op.form->name : "?") + " is not in model " +
            model_->name};
  }
  const OpDecl& form = declOf(op);
  const std::size_t fixed = form.nameCount(0);
  const std::size_t most = form.mostNames();
  if (op.names.size() < fixed || op.names.size() > most) {
    const std::string count =
        fixed == most ? std::to_string(fixed) : std::to_string(fixed) + ".." + std::to_string(most);
    return {form.name + " takes " + count + (most == 1 ? " name" : " names") + ", got " +
            std::to_string(op.names.size()) + ": " + model_->usage(form)};
  }
  for (std::size_t i = 0; i < op.names.size(); ++i) {
    if (std::string why = nameError(op.names[i]); !why.empty()) return {why, static_cast<int>(i)};
    for (std::size_t j = 0; j < i; ++j) {
      if (op.names[j] == op.names[i]) {
        return {"name " + op.names[i] + " is given twice: the names of one operation are distinct",
                static_cast<int>(i)};
      }
    }
  }
  if (op.args.size() != form.args.size()) {
    return {form.name + " has " + std::to_string(form.args.size()) + " arguments, got " +
            std::to_string(op.args.size())};
  }
  for (std::size_t a = 0; a < form.args.size(); ++a) {
    const ArgDecl& d = form.args[a];
    if (op.args[a] < d.min || op.args[a] > d.max) {
      return {d.key + "=" + std::to_string(op.args[a]) + " is out of bounds: " + d.key + " takes " +
              d.rangeText()};
    }
  }
  for (std::size_t i = 0; i < op.names.size(); ++i) {
    const SlotDecl& slot = form.slots[form.slotOfName(i, op.names.size())];
    const std::string& name = op.names[i];
    const int index = static_cast<int>(i);
    const Name* known = find(name);
    if (slot.use == SlotUse::Introduce) {
      if (known) {
        return {"name " + name + " was already used: a name is introduced once, never reused",
                index};
      }
      continue;
    }
    if (!known) return {name + " is not alive: nothing created it", index};
    if (known->kind != slot.kind) {
      return {name + " is " + article(model_->resources[known->kind].kind) + ", " + form.name +
                  " needs " + article(model_->resources[slot.kind].kind),
              index};
    }
    if (!known->alive) return {name + " is not alive: it was destroyed", index};
  }
  return {};
}

void ModelState::apply(const Operation& op) {
  if (const Verdict v = check(op); !v.ok()) {
    throw std::invalid_argument(operationText(op) + ": " + v.reason);
  }
  applyValid(op);
}

void ModelState::applyValid(const Operation& op) {
  const OpDecl& form = declOf(op);
  const std::size_t count = op.names.size();
  std::vector<std::size_t> at(count);
  for (std::size_t i = 0; i < count; ++i) {
    const SlotDecl& slot = form.slots[form.slotOfName(i, count)];
    if (slot.use != SlotUse::Introduce) {
      at[i] = index_.at(op.names[i]);
      continue;
    }
    Name n;
    n.name = op.names[i];
    n.kind = slot.kind;
    n.introducedAt = applied_;
    at[i] = names_.size();
    index_.emplace(n.name, at[i]);
    alive_[slot.kind].push_back(at[i]);
    names_.push_back(std::move(n));
  }
  // An owned name belongs to the first name of its owner's kind that the operation does not end.
  for (std::size_t i = 0; i < count; ++i) {
    if (form.slots[form.slotOfName(i, count)].use != SlotUse::Introduce) continue;
    const std::optional<std::size_t> ownerKind = model_->resources[names_[at[i]].kind].owner;
    if (!ownerKind) continue;
    for (std::size_t j = 0; j < count; ++j) {
      const SlotDecl& s = form.slots[form.slotOfName(j, count)];
      if (s.kind == *ownerKind && (s.use == SlotUse::Use || s.use == SlotUse::Introduce)) {
        names_[at[i]].owner = at[j];
        break;
      }
    }
  }
  for (const EffectDecl& e : form.effects) {
    uint64_t& flags = names_[at[nameIndexOfSlot(form, e.slot, count)]].flags;
    const uint64_t bit = uint64_t{1} << e.flag;
    flags = e.set ? flags | bit : flags & ~bit;
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (form.slots[form.slotOfName(i, count)].use != SlotUse::End) continue;
    Name& n = names_[at[i]];
    n.alive = false;
    n.endedAt = applied_;
    auto& live = alive_[n.kind];
    live.erase(std::find(live.begin(), live.end(), at[i]));
  }
  ++applied_;
}

}  // namespace gpufuzz
