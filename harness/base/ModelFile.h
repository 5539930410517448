// ModelFile.h: a lifecycle model as a file that a child can read. Every child gets the absolute
// path of its sequence's model in GPUFUZZ_MODEL (docs/target.md, Vocabulary); a built-in model is
// written from its text, so a target reads one format whatever the model.
#pragma once

#include <filesystem>
#include <string>

#include "model/LifecycleModel.h"
#include "model/Sequence.h"

namespace gpufuzz {

inline constexpr const char* kModelVariable = "GPUFUZZ_MODEL";

/// The absolute path of `model`'s text under `dir` (written once, atomically, as
/// `models/NAME-HASH.model`); later calls return the same path.
std::filesystem::path modelFileIn(const std::filesystem::path& dir, const LifecycleModel& model);

/// The `# model:` directive a child's sequence file carries: a built-in's name (none for `all`,
/// a file's default), else the absolute path of its copy under `dir`.
std::optional<std::string> childModelDirective(const std::filesystem::path& dir,
                                               const LifecycleModel& model);

/// A file `seq` is written to in folder `dir` (a finding's, the corpus): its `# model:`
/// directive set so that it replays with no options: a built-in's name (none for `all`), else
/// `./NAME.model`, with the model's text copied beside it.
Sequence withPortableModel(const Sequence& seq, const std::filesystem::path& dir);

}  // namespace gpufuzz
