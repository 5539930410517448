// CudaAsyncCommandTest.cpp: `--backend cuda-async` through the gpufuzz executable: exit status 2
// and a message naming the missing driver where there is none, before anything runs; the sequence
// run where there is one.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include "harness/base/AtomicFile.h"
#include "renderer/Backends.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

bool driverLoads() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return false;
  dlclose(library);
  return true;
}

TEST(CudaAsyncCommand, ReplayOnCudaAsyncNeedsTheDriver) {
  testing::ScratchDir dir;
  const std::string gpufuzz = (testing::binDir() / "gpufuzz").string();
  const auto seq = dir.path() / "pass.seq";
  writeFileAtomically(seq, "create r0\ndraw r0\ndestroy r0\n");
  const auto r = testing::runCommand(gpufuzz + " replay --backend cuda-async " + seq.string());
  if (!cudaBackendBuilt()) {
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("built without the CUDA backends"), std::string::npos) << r.output;
    return;
  }
  if (!driverLoads()) {
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("no CUDA driver: libcuda.so.1 not found"), std::string::npos)
        << r.output;
    return;
  }
  EXPECT_EQ(r.status, 0) << r.output;
}

TEST(SanitizerOption, BadOrUnusableSanitizersAreExitStatusTwoBeforeAnythingRuns) {
  testing::ScratchDir dir;
  const std::string gpufuzz = (testing::binDir() / "gpufuzz").string();
  const auto seq = dir.path() / "pass.seq";
  writeFileAtomically(seq, "create r0\ndestroy r0\n");
  const auto bogus = testing::runCommand(gpufuzz + " replay --sanitizer asan " + seq.string());
  EXPECT_EQ(bogus.status, 2) << bogus.output;
  EXPECT_NE(bogus.output.find("--sanitizer: 'asan' is not one of"), std::string::npos)
      << bogus.output;
  const auto missing =
      testing::runCommand("GPUFUZZ_COMPUTE_SANITIZER=/nonexistent " + gpufuzz +
                          " replay --backend cuda --sanitizer memcheck " + seq.string());
  EXPECT_EQ(missing.status, 2) << missing.output;
  EXPECT_NE(missing.output.find("--sanitizer memcheck: compute-sanitizer not found"),
            std::string::npos)
      << missing.output;
  const std::string fake =
      (testing::sourceDir() / "tests/harness/supervise/fake-compute-sanitizer").string();
  const auto sim =
      testing::runCommand("GPUFUZZ_COMPUTE_SANITIZER=" + fake + " " + gpufuzz +
                          " replay --backend sim --sanitizer memcheck " + seq.string());
  EXPECT_EQ(sim.status, 2) << sim.output;
  EXPECT_NE(sim.output.find("compute-sanitizer checks CUDA only"), std::string::npos) << sim.output;
}

}  // namespace
}  // namespace gpufuzz
