// Operation.cpp: operations of a model, their text, and the syntax of names.
#include "model/Operation.h"

#include <stdexcept>

namespace gpufuzz {

uint64_t Operation::arg(std::string_view key) const {
  const std::optional<std::size_t> i = form->argIndex(key);
  if (!i || *i >= args.size()) {
    throw std::out_of_range(std::string(form->name) + " has no argument " + std::string(key));
  }
  return args[*i];
}

std::size_t Operation::kindOfName(std::size_t i) const {
  return form->slots[form->slotOfName(i, names.size())].kind;
}

SlotUse Operation::useOfName(std::size_t i) const {
  return form->slots[form->slotOfName(i, names.size())].use;
}

Operation makeOperation(const LifecycleModel& model, std::string_view opName,
                        std::vector<std::string> names,
                        std::initializer_list<std::pair<std::string_view, uint64_t>> args) {
  const OpDecl* form = model.op(opName);
  if (!form) {
    throw std::invalid_argument("model " + model.name + " has no operation " + std::string(opName));
  }
  Operation op;
  op.form = form;
  op.names = std::move(names);
  for (const ArgDecl& a : form->args)
    op.args.push_back(a.defaultValue);
  for (const auto& [key, value] : args) {
    const std::optional<std::size_t> i = form->argIndex(key);
    if (!i || value < form->args[*i].min || value > form->args[*i].max) {
      throw std::invalid_argument(std::string(opName) + ": bad argument " + std::string(key));
    }
    op.args[*i] = value;
  }
  return op;
}

std::string nameError(std::string_view name) {
  if (name.size() <= kMaxNameLength && isIdentifier(name)) return {};
  return "bad name '" + std::string(name) + "': names match [a-z][a-z0-9_]*, at most " +
         std::to_string(kMaxNameLength) + " characters";
}

std::string operationText(const Operation& op) {
  std::string text = op.thread == 0 ? "" : "@" + std::to_string(op.thread) + " ";
  text += op.name();
  for (const std::string& n : op.names)
    text += " " + n;
  for (std::size_t i = 0; i < op.form->args.size() && i < op.args.size(); ++i) {
    const ArgDecl& a = op.form->args[i];
    if (op.args[i] != a.defaultValue) text += " " + a.key + "=" + a.valueText(op.args[i]);
  }
  if (op.mark) text += markText(*op.mark);
  return text;
}

std::vector<std::string> introducedNames(const Operation& op) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < op.names.size(); ++i) {
    if (op.useOfName(i) == SlotUse::Introduce) out.push_back(op.names[i]);
  }
  return out;
}

bool endsAName(const Operation& op) {
  for (std::size_t i = 0; i < op.names.size(); ++i) {
    if (op.useOfName(i) == SlotUse::End) return true;
  }
  return false;
}

void UnmadeNames::failed(const Operation& op) {
  for (std::string& n : introducedNames(op))
    unmade_.insert(std::move(n));
}

bool UnmadeNames::skips(const Operation& op) {
  if (unmade_.empty()) return false;
  bool uses = false;
  for (std::size_t i = 0; i < op.names.size(); ++i) {
    if (op.useOfName(i) != SlotUse::Introduce && unmade_.contains(op.names[i])) uses = true;
  }
  if (uses) failed(op);
  return uses;
}

}  // namespace gpufuzz
