// ExecutorTables.h: the check of a model executor's table against its model file, shared by the
// tests of each executor's table.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "model/LifecycleModel.h"
#include "renderer/device/ExecutorKit.h"

namespace gpufuzz::testing {

/// What kit::tableDisagreements needs of `model`, read by the model's own parser.
inline kit::ModelOutline outlineOf(const LifecycleModel& model) {
  kit::ModelOutline outline{model.name, {}, {}, {}};
  for (const OpDecl& op : model.ops)
    outline.operations.push_back(op.name);
  for (std::size_t k = 0; k < model.resources.size(); ++k) {
    outline.kinds.push_back(model.resources[k].kind);
    if (model.defaultRelease(k) != nullptr)
      outline.releasedByDefault.push_back(model.resources[k].kind);
  }
  return outline;
}

/// Fails the test with each disagreement of `table` and its built-in model file.
inline void expectTableMatchesModel(const kit::TableShape& table) {
  const LifecycleModel& model = builtinModel(table.model);
  for (const std::string& disagreement : kit::tableDisagreements(table, outlineOf(model)))
    ADD_FAILURE() << disagreement;
}

}  // namespace gpufuzz::testing
