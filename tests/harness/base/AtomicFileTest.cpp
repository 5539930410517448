// AtomicFileTest.cpp: whole files or nothing.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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

/// A pid no process has now: a child's, once reaped.
long deadPid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

/// Runs `f` in a child under a file-size limit of `bytes` (SIGXFSZ ignored, as gpufuzz does);
/// the child's exit status.
template <typename F>
int underFileSizeLimit(rlim_t bytes, F f) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{bytes, bytes};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    ::_exit(f());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(AtomicFile, AFileTooLargeForTheDiskLeavesTheOldOneAndNamesThePath) {
  testing::ScratchDir dir;
  const auto path = dir.path() / "finding.json";
  writeFileAtomically(path, "old");
  const int status = underFileSizeLimit(1000, [&] {
    try {
      writeFileAtomically(path, std::string(5000, 'x'));
    } catch (const WriteError& e) {
      const std::string what = e.what();
      return what.find(path.string()) != std::string::npos &&
                     what.find("too large") != std::string::npos
                 ? 0
                 : 2;
    }
    return 1;
  });
  EXPECT_EQ(status, 0) << "1: no error; 2: the message names neither the file nor the reason";
  EXPECT_EQ(readFile(path), "old");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path()))
    ++entries;
  EXPECT_EQ(entries, 1U) << "a temporary was left";
}

TEST(AtomicFile, AppendsWholeLinesOrNone) {
  testing::ScratchDir dir;
  const auto path = dir.path() / "plot_data";
  appendFileWhole(path, "one\n");
  const int status = underFileSizeLimit(10, [&] {
    try {
      appendFileWhole(path, "a line longer than the limit\n");
    } catch (const WriteError&) {
      return 0;
    }
    return 1;
  });
  EXPECT_EQ(status, 0);
  EXPECT_EQ(readFile(path), "one\n") << "a part of the line was left";
  appendFileWhole(path, "two\n");
  EXPECT_EQ(readFile(path), "one\ntwo\n");
}

TEST(AtomicFile, RemovesOnlyTheTemporariesOfWritersThatAreGone) {
  testing::ScratchDir dir;
  const auto gone = dir.path() / (".finding.json.tmp." + std::to_string(deadPid()) + ".0");
  const auto alive = dir.path() / (".stats.json.tmp." + std::to_string(::getpid()) + ".3");
  const auto kept = dir.path() / ".hidden";
  for (const auto& p : {gone, alive, kept})
    std::ofstream(p) << "x";
  EXPECT_EQ(removeAbandonedTemporaries(dir.path()), 1U);
  EXPECT_FALSE(std::filesystem::exists(gone));
  EXPECT_TRUE(std::filesystem::exists(alive));
  EXPECT_TRUE(std::filesystem::exists(kept));
}

}  // namespace
}  // namespace gpufuzz
