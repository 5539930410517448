// ModelFile.h: a lifecycle model as files that a child can read. Every child gets the absolute
// path of its sequence's model in GPUFUZZ_MODEL and of its normalized facts in
// GPUFUZZ_MODEL_FACTS (docs/target.md, Vocabulary). A built-in model is written from its text,
// so a target reads one format whatever the model. The facts lie beside every model file written
// here, so that a target run by hand finds them from the file's path alone.
#pragma once

#include <filesystem>
#include <string>

#include "model/LifecycleModel.h"
#include "model/Sequence.h"

namespace gpufuzz {

inline constexpr const char* kModelVariable = "GPUFUZZ_MODEL";
inline constexpr const char* kModelFactsVariable = "GPUFUZZ_MODEL_FACTS";

/// The absolute path of `model`'s text under `dir` (written once, atomically, as
/// `models/NAME-HASH.model`, its facts beside it as `models/NAME-HASH.facts`); later calls return
/// the same path.
std::filesystem::path modelFileIn(const std::filesystem::path& dir, const LifecycleModel& model);
/// The absolute path of `model`'s normalized facts under `dir`, beside modelFileIn's file.
std::filesystem::path modelFactsFileIn(const std::filesystem::path& dir,
                                       const LifecycleModel& model);

/// The `# model:` directive a child's sequence file carries: a built-in's name (none for `all`,
/// a file's default), else the absolute path of its copy under `dir`.
std::optional<std::string> childModelDirective(const std::filesystem::path& dir,
                                               const LifecycleModel& model);

/// A file `seq` is written to in folder `dir` (a finding's, the corpus): its `# model:`
/// directive set so that it replays with no options: a built-in's name (none for `all`), else
/// `./NAME.model`, with the model's text and its facts (`NAME.facts`) written beside it.
Sequence withPortableModel(const Sequence& seq, const std::filesystem::path& dir);

}  // namespace gpufuzz
