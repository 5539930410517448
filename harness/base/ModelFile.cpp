// ModelFile.cpp: model texts written where children and findings can read them.
#include "harness/base/ModelFile.h"

#include <map>
#include <mutex>

#include "harness/base/AtomicFile.h"
#include "model/NormalizedModel.h"

namespace gpufuzz {

namespace {

/// Writes `model`'s text to `file` and its facts beside it, the facts first: a reader that finds
/// the model file finds its facts there too.
void writeModelAndFacts(const std::filesystem::path& file, const LifecycleModel& model) {
  writeFileAtomically(modelFactsPath(file.string()), normalizedModel(model));
  writeFileAtomically(file, model.text);
}

}  // namespace

std::filesystem::path modelFileIn(const std::filesystem::path& dir, const LifecycleModel& model) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, const LifecycleModel*>, std::filesystem::path> written;
  std::lock_guard lock(mutex);
  const auto key = std::make_pair(dir.string(), &model);
  if (const auto it = written.find(key); it != written.end()) return it->second;
  const std::filesystem::path file =
      std::filesystem::absolute(dir / "models" / (model.name + "-" + model.hash + ".model"));
  std::filesystem::create_directories(file.parent_path());
  writeModelAndFacts(file, model);
  written.emplace(key, file);
  return file;
}

std::filesystem::path modelFactsFileIn(const std::filesystem::path& dir,
                                       const LifecycleModel& model) {
  return modelFactsPath(modelFileIn(dir, model).string());
}

namespace {

/// A built-in model's directive: its name, or none for `all`, which a file without one reads as.
std::optional<std::string> builtinDirective(const LifecycleModel& model) {
  if (&model == &defaultModel()) return std::nullopt;
  return model.name;
}

}  // namespace

std::optional<std::string> childModelDirective(const std::filesystem::path& dir,
                                               const LifecycleModel& model) {
  if (model.builtin) return builtinDirective(model);
  return modelFileIn(dir, model).string();
}

Sequence withPortableModel(const Sequence& seq, const std::filesystem::path& dir) {
  Sequence out = seq;
  const LifecycleModel& model = seq.lifecycle();
  if (model.builtin) {
    out.directives.model = builtinDirective(model);
    return out;
  }
  std::filesystem::create_directories(dir);
  writeModelAndFacts(dir / (model.name + ".model"), model);
  out.directives.model = "./" + model.name + ".model";
  return out;
}

}  // namespace gpufuzz
