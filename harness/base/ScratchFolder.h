// ScratchFolder.h: where a campaign's short-lived files go: the children's sequence files, and
// their crash and stacks files (docs/files.md).
#pragma once

#include <filesystem>

namespace gpufuzz {

/// $TMPDIR when it is set (a node's scratch); else /dev/shm, a file system in memory, when this
/// process may create files there; else /tmp. Every run makes and removes a sequence file and a
/// stacks file, which takes about twice as long on a disk's file system as in memory
/// (bench/RESULTS.md, "Harness throughput").
std::filesystem::path scratchFolder();

}  // namespace gpufuzz
