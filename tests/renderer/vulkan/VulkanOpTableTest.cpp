// VulkanOpTableTest.cpp: the vulkan executor's op table and per-kind table against the model file
// it runs (model/models/vulkan.model), both ways. An operation of the model without a handler
// would fail a sequence at run time; a handler the model lacks is dead code that drifted from it.
// Nothing here calls Vulkan.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/LifecycleModel.h"
#include "renderer/vulkan/VulkanExecutor.h"

namespace gpufuzz {
namespace {

/// The names of `names` that `others` lacks.
std::vector<std::string> vulkanTableLacks(const std::vector<std::string>& names,
                                          const std::set<std::string>& others) {
  std::vector<std::string> missing;
  std::copy_if(names.begin(), names.end(), std::back_inserter(missing),
               [&](const std::string& name) { return others.count(name) == 0; });
  return missing;
}

/// Fails for a name of one side that the other lacks, and for a name a table holds twice.
void expectSameVulkanNames(const std::vector<std::string_view>& table,
                           const std::vector<std::string>& model, const char* what) {
  const std::vector<std::string> rows(table.begin(), table.end());
  const std::set<std::string> tableSet(rows.begin(), rows.end());
  const std::set<std::string> modelSet(model.begin(), model.end());
  EXPECT_EQ(tableSet.size(), rows.size()) << "the executor's " << what << " table repeats a name";
  for (const std::string& name : vulkanTableLacks(model, tableSet))
    ADD_FAILURE() << "model vulkan has " << what << " " << name << ", the executor's table not";
  for (const std::string& name : vulkanTableLacks(rows, modelSet))
    ADD_FAILURE() << "the executor's table has " << what << " " << name << ", model vulkan not";
}

TEST(VulkanOpTableTest, TheOpTableHoldsTheModelsOperations) {
  std::vector<std::string> model;
  for (const OpDecl& op : builtinModel("vulkan").ops)
    model.push_back(op.name);
  expectSameVulkanNames(vulkanExecutorOperations(), model, "operation");
}

TEST(VulkanOpTableTest, TheKindTableHoldsTheModelsKinds) {
  std::vector<std::string> model;
  for (const ResourceDecl& kind : builtinModel("vulkan").resources)
    model.push_back(kind.kind);
  expectSameVulkanNames(vulkanExecutorKinds(), model, "kind");
}

}  // namespace
}  // namespace gpufuzz
