// VulkanOpTableTest.cpp: the vulkan executor's op table against the model file it runs
// (model/models/vulkan.model), both ways. An operation of the model without a handler would fail
// a sequence at run time; a handler the model lacks is code that drifted from it. Nothing here
// calls Vulkan.
#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <string>

#include "model/LifecycleModel.h"
#include "renderer/device/ExecutorKit.h"
#include "renderer/vulkan/VulkanExecutor.h"

namespace gpufuzz {
namespace {

/// What kit::tableDisagreements needs of model `vulkan`, read by the model's own parser.
kit::ModelOutline vulkanModelOutline() {
  const LifecycleModel& model = builtinModel("vulkan");
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

TEST(VulkanOpTableTest, TheOpTableMatchesTheModel) {
  for (const std::string& disagreement :
       kit::tableDisagreements(vulkanExecutorTable(), vulkanModelOutline()))
    ADD_FAILURE() << disagreement;
}

// A leftover ends once the device is idle, without the oracle: a default release through the
// operation's handler would count refusals and zombies that the sequence never made.
TEST(VulkanOpTableTest, EveryKindOfTheModelOverridesItsDefaultRelease) {
  const kit::TableShape table = vulkanExecutorTable();
  const std::set<std::string> overridden(table.overrides.begin(), table.overrides.end());
  const kit::ModelOutline model = vulkanModelOutline();
  const std::set<std::string> kinds(model.kinds.begin(), model.kinds.end());
  EXPECT_EQ(overridden.size(), table.overrides.size()) << "a kind is overridden twice";
  EXPECT_EQ(overridden, kinds);
}

}  // namespace
}  // namespace gpufuzz
