// TestOps.h: operations of a lifecycle model for tests, written as briefly as the old fixed
// table allowed: testOp("draw", {"r0"}, {{"triangles", 9}}).
//
// Unlike makeOperation(), values are not checked against their bounds, nor names against their
// count: a test of validation needs operations that break them. An operation or key the model
// does not declare is still std::invalid_argument, so a typo in a test fails loudly.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/LifecycleModel.h"
#include "model/Operation.h"

namespace gpufuzz::testing {

inline Operation testOp(const LifecycleModel& model, std::string_view name,
                        std::vector<std::string> names = {},
                        std::initializer_list<std::pair<std::string_view, uint64_t>> args = {},
                        int line = 0) {
  const OpDecl* form = model.op(name);
  if (form == nullptr) {
    throw std::invalid_argument("model " + model.name + " has no operation " + std::string(name));
  }
  Operation op;
  op.form = form;
  op.names = std::move(names);
  op.line = line;
  for (const ArgDecl& a : form->args)
    op.args.push_back(a.defaultValue);
  for (const auto& [key, value] : args) {
    const std::optional<std::size_t> i = form->argIndex(key);
    if (!i) throw std::invalid_argument(std::string(name) + " has no argument " + std::string(key));
    op.args[*i] = value;
  }
  return op;
}

/// An operation of the built-in model `all` (what a file without `# model:` reads in).
inline Operation testOp(std::string_view name, std::vector<std::string> names = {},
                        std::initializer_list<std::pair<std::string_view, uint64_t>> args = {},
                        int line = 0) {
  return testOp(builtinModel("all"), name, std::move(names), args, line);
}

}  // namespace gpufuzz::testing
