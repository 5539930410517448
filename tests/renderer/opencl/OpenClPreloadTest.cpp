// OpenClPreloadTest.cpp: the fork server's preload maps every driver the ICD loader would open,
// without an OpenCL call, so that forked children do not load and relocate them again.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "renderer/opencl/OpenClPreload.h"
#include "tests/ScratchDir.h"

namespace gpufuzz {
namespace {

bool mapped(const char* library) {
  return ::dlopen(library, RTLD_NOW | RTLD_NOLOAD) != nullptr;
}

TEST(OpenClPreload, MapsTheDriversTheVendorFilesName) {
  // A fresh process: the test binary's other tests may have loaded OpenCL already.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const testing::ScratchDir dir;
  dir.write("pocl.icd", "  libpocl.so.2 \n");
  ::unsetenv("OCL_ICD_FILENAMES");  // it would override the vendor files
  ASSERT_EQ(::setenv("OCL_ICD_VENDORS", dir.path().c_str(), 1), 0);
  EXPECT_EXIT(
      {
        if (mapped("libpocl.so.2") || mapped("libOpenCL.so.1")) std::_Exit(3);
        preloadOpenClLibraries();
        std::_Exit(mapped("libOpenCL.so.1") ? (mapped("libpocl.so.2") ? 0 : 2) : 1);
      },
      ::testing::ExitedWithCode(0), "")
      << "exit 1: the ICD loader was not mapped; 2: pocl was not; 3: either was mapped before";
  ::unsetenv("OCL_ICD_VENDORS");
}

}  // namespace
}  // namespace gpufuzz
