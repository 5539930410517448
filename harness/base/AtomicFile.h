// AtomicFile.h: files written whole or not at all (temp file, fsync, rename, fsync of the
// directory), so a campaign stopped at any instant, or a disk that fills up, leaves every file
// readable: the old content or the new, never a part.
//
// Contract:
// - A failure to write throws WriteError naming the file meant (not its temporary) and the
//   system's reason ("No space left on device"); the temporary is removed first.
// - A process killed while it writes leaves a hidden temporary (`.NAME.tmp.PID.N`) beside the
//   file, which removeAbandonedTemporaries() takes away once that process is gone.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace gpufuzz {

/// A file the harness could not write (a full disk, a file-size limit, no permission).
class WriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Replaces `path` with `content` atomically; creates parent directories. WriteError on failure.
void writeFileAtomically(const std::filesystem::path& path, const std::string& content);

/// Writes `content` to `path` in place, without a temporary or a flush to the disk: for a file
/// that lives only while a child reads it (a run's sequence file). WriteError on failure.
void writeScratchFile(const std::filesystem::path& path, const std::string& content);

/// Appends `content` to `path` whole: written with one write(2), and on a short or failed write
/// the file is cut back to its former length before WriteError is thrown.
void appendFileWhole(const std::filesystem::path& path, const std::string& content);

/// Makes the directory's entries (a rename into it) durable; best effort.
void syncDirectory(const std::filesystem::path& dir);

/// Removes the temporaries in `dir` that writeFileAtomically() left when its process was killed
/// (their process is gone); returns how many.
std::size_t removeAbandonedTemporaries(const std::filesystem::path& dir);

/// Whether a process of this id is alive (a pid written into a file or folder name).
bool processAlive(long pid);

/// The whole file, or std::runtime_error.
std::string readFile(const std::filesystem::path& path);

}  // namespace gpufuzz
