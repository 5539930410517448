// ModelCommand.cpp: `gpufuzz model check FILE`, `gpufuzz model show NAME` and `gpufuzz model
// normalize NAME|FILE` (docs/cli.md): a model validated with every rule of docs/models.md, a
// built-in one printed as its file, or a model printed as the normalized facts targets read.
#include <cstdio>

#include "base/InputError.h"
#include "harness/cli/Subcommands.h"
#include "model/LifecycleModel.h"
#include "model/NormalizedModel.h"

namespace gpufuzz {

int runModel(const CommandLine& cl) {
  const std::string& action = cl.files.at(0);
  const std::string& operand = cl.files.at(1);
  if (action == "show") {
    std::fputs(builtinModel(operand).text.c_str(), stdout);
    return 0;
  }
  if (action != "check" && action != "normalize") {
    throw InputError("gpufuzz model: unknown action '" + action +
                     "' (expected check FILE, show NAME or normalize NAME|FILE)");
  }
  const LifecycleModel& model =
      isBuiltinModelName(operand) ? builtinModel(operand) : loadModelFile(operand);
  if (action == "normalize") {
    std::fputs(normalizedModel(model).c_str(), stdout);
    return 0;
  }
  for (const std::string& w : model.warnings)
    std::fprintf(stderr, "%s\n", w.c_str());
  if (!cl.value<Option::Quiet>()) std::fputs(model.describe().c_str(), stdout);
  return 0;
}

}  // namespace gpufuzz
