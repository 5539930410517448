// ProjectPaths.h: where a test finds the project's files and the built programs, decided at run
// time. A build copied into another checkout (the way onto a GPU machine, docs/gpu-gate.md) runs
// there, so a path compiled in names a folder of the machine that built it; each is a fallback.
//
// sourceDir(), the checkout whose files a test reads, is the first of:
// - $GPUFUZZ_CHECKOUT when set (the GPU gate, tools/test-gpu, sets it to its own checkout);
// - the nearest folder above the executable that is a checkout (a build inside its checkout);
// - the nearest folder above the current directory that is a checkout;
// - GPUFUZZ_SOURCE_DIR, compiled in.
// binDir(), where the built programs are: the executable's own folder when gpufuzz-runner is
// there (a copied bin folder keeps them together), else GPUFUZZ_BIN_DIR, compiled in.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <system_error>

namespace gpufuzz::testing {

/// The folder of the running executable, or the current directory when it cannot be read.
inline std::filesystem::path selfDir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path(ec) : exe.parent_path();
}

/// Whether `dir` is a checkout of this project: it has the corpus and the GPU gate.
inline bool isCheckout(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_directory(dir / "corpus" / "seed-table", ec) &&
         std::filesystem::is_regular_file(dir / "tools" / "test-gpu", ec);
}

/// The nearest checkout at or above `dir`, if any.
inline std::optional<std::filesystem::path> checkoutAbove(std::filesystem::path dir) {
  for (; !dir.empty(); dir = dir.parent_path()) {
    if (isCheckout(dir)) return dir;
    if (dir == dir.parent_path()) break;
  }
  return std::nullopt;
}

inline std::filesystem::path sourceDir() {
  if (const char* given = std::getenv("GPUFUZZ_CHECKOUT"); given != nullptr && *given != '\0') {
    return given;
  }
  if (auto above = checkoutAbove(selfDir())) return *above;
  std::error_code ec;
  if (auto above = checkoutAbove(std::filesystem::current_path(ec))) return *above;
#ifdef GPUFUZZ_SOURCE_DIR
  return GPUFUZZ_SOURCE_DIR;
#else
  return std::filesystem::current_path(ec);
#endif
}

inline std::filesystem::path binDir() {
  const auto here = selfDir();
  std::error_code ec;
  if (std::filesystem::exists(here / "gpufuzz-runner", ec)) return here;
#ifdef GPUFUZZ_BIN_DIR
  return GPUFUZZ_BIN_DIR;
#else
  return here;
#endif
}

}  // namespace gpufuzz::testing
