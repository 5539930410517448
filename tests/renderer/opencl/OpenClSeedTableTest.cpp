// OpenClSeedTableTest.cpp: the seed's table on the opencl backend, through gpufuzz replay and its
// child processes (this process never calls OpenCL). Under max-26.5.0 the plan acts at the
// device seam, so OpenCL hangs exactly where sim does (each file's own expectation); without a
// plan every row passes, since OpenCL's reference-counted release tolerates both orders.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/ProjectPaths.h"
#include "tests/renderer/opencl/OpenClTestDevice.h"

namespace gpufuzz {
namespace {

struct Captured {
  int status = -1;
  std::string output;
};

Captured run(const std::string& command) {
  Captured r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    r.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// gpufuzz replay of the seed's table, both found at run time (tests/ProjectPaths.h): a build
/// copied into another checkout replays that checkout's files with the gpufuzz beside it.
std::string replay(const std::string& options) {
  return "'" + (testing::binDir() / "gpufuzz").string() + "' replay --backend opencl --device " +
         testing::openClTestDevice() + " --deadline 3000 --no-stacks " + options + " '" +
         (testing::sourceDir() / "corpus/seed-table").string() + "'/*.seq";
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

TEST(OpenClSeedTable, Max2650HangsWhereTheSeedSaysLikeSim) {
  const Captured r = run(replay("--faults max-26.5.0"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(count(r.output, ".seq: hang at "), 3U) << r.output;
  // Each planted by the plan's rules, acting at the seam over OpenCL.
  EXPECT_EQ(count(r.output, "planted by max-26.5.0:"), 3U) << r.output;
  EXPECT_EQ(count(r.output, ": pass ("), 3U) << r.output;
  EXPECT_NE(r.output.find("6 file(s), 0 missed their expectation"), std::string::npos) << r.output;
}

TEST(OpenClSeedTable, WithoutAPlanEveryRowPasses) {
  const Captured r = run(replay("--faults none"));
  // The hang rows miss their (sim) expectation: that is the point, they pass on OpenCL.
  EXPECT_EQ(count(r.output, ": pass ("), 6U) << r.output;
  EXPECT_EQ(count(r.output, ": hang"), 0U) << r.output;
  EXPECT_EQ(count(r.output, ": error"), 0U) << r.output;
}

}  // namespace
}  // namespace gpufuzz
