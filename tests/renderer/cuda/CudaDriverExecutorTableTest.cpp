// CudaDriverExecutorTableTest.cpp: the cuda-driver executor's table against
// model/models/cuda-driver.model.
#include <gtest/gtest.h>

#include "renderer/cuda/CudaDriverExecutor.h"
#include "tests/renderer/ExecutorTables.h"

namespace gpufuzz {
namespace {

TEST(ExecutorTable, CudaDriverMatchesItsModel) {
  testing::expectTableMatchesModel(cudaDriverExecutorTable());
}

}  // namespace
}  // namespace gpufuzz
