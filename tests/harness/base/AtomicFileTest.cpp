// AtomicFileTest.cpp: whole files or nothing.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness/base/AtomicFile.h"
#include "tests/ScratchDir.h"

namespace gpufuzz {
namespace {

TEST(AtomicFile, ReplacesWholeFilesAndLeavesNoTemporaries) {
  testing::ScratchDir dir;
  const auto path = dir.path() / "sub" / "f.txt";
  writeFileAtomically(path, "one");
  writeFileAtomically(path, "two");
  EXPECT_EQ(readFile(path), "two");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(path.parent_path()))
    ++entries;
  EXPECT_EQ(entries, 1U);
}

}  // namespace
}  // namespace gpufuzz
