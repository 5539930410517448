// OpenClExecutorTableTest.cpp: the opencl executor's table against model/models/opencl.model.
#include <gtest/gtest.h>

#include "renderer/opencl/OpenClModelExecutor.h"
#include "tests/renderer/ExecutorTables.h"

namespace gpufuzz {
namespace {

TEST(ExecutorTable, OpenClMatchesItsModel) {
  testing::expectTableMatchesModel(openClExecutorTable());
}

}  // namespace
}  // namespace gpufuzz
