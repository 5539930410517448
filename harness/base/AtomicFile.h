// AtomicFile.h: files written whole or not at all (temp file, fsync, rename, fsync of the
// directory), so a campaign stopped at any instant leaves every finding readable.
#pragma once

#include <filesystem>
#include <string>

namespace gpufuzz {

/// Replaces `path` with `content` atomically; creates parent directories. Throws
/// std::runtime_error on failure.
void writeFileAtomically(const std::filesystem::path& path, const std::string& content);

/// Makes the directory's entries (a rename into it) durable; best effort.
void syncDirectory(const std::filesystem::path& dir);

/// The whole file, or std::runtime_error.
std::string readFile(const std::filesystem::path& path);

}  // namespace gpufuzz
