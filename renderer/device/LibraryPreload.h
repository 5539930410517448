// LibraryPreload.h: maps a runtime's libraries into the process without calling them.
//
// A fork server maps them once before it forks, so that no child pays again for loading and
// relocating them; the runtime's loader then finds each one already mapped. Nothing here calls a
// runtime, so a process that preloads may still fork children that use it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace gpufuzz {

/// The entries of a colon-separated list such as VK_DRIVER_FILES; none for null or empty text.
std::vector<std::string> pathList(const char* text);

/// The files ending in `extension` (".json") that `places` name: a place that is a folder gives
/// its files of that ending, a place that is a file gives itself.
std::vector<std::filesystem::path> filesIn(const std::vector<std::string>& places,
                                           std::string_view extension);

/// dlopen of `library` with every symbol bound now, held for the process's life; false when it
/// cannot be loaded, which is left to the runtime's own loader to report.
bool holdLibrary(const std::string& library);

}  // namespace gpufuzz
