// VulkanExecutorTableTest.cpp: the vulkan executor's table against model/models/vulkan.model.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "model/LifecycleModel.h"
#include "renderer/vulkan/VulkanExecutor.h"
#include "tests/renderer/ExecutorTables.h"

namespace gpufuzz {
namespace {

TEST(ExecutorTable, VulkanMatchesItsModel) {
  testing::expectTableMatchesModel(vulkanExecutorTable());
}

// A leftover ends once the device is idle, without the oracle: a default release through the
// operation's handler would count refusals and zombies that the sequence never made.
TEST(ExecutorTable, VulkanOverridesTheReleaseOfEveryKind) {
  const kit::TableShape table = vulkanExecutorTable();
  const std::set<std::string> overridden(table.overrides.begin(), table.overrides.end());
  const kit::ModelOutline model = testing::outlineOf(builtinModel("vulkan"));
  EXPECT_EQ(overridden.size(), table.overrides.size()) << "a kind is overridden twice";
  EXPECT_EQ(overridden, std::set<std::string>(model.kinds.begin(), model.kinds.end()));
}

}  // namespace
}  // namespace gpufuzz
