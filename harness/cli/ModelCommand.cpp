// ModelCommand.cpp: `gpufuzz model check FILE` and `gpufuzz model show NAME` (docs/cli.md): a model
// validated with every rule of docs/models.md, or a built-in one printed as its file.
#include <cstdio>

#include "harness/cli/Subcommands.h"
#include "model/LifecycleModel.h"
#include "renderer/InputError.h"

namespace gpufuzz {

int runModel(const CommandLine& cl) {
  const std::string& action = cl.files.at(0);
  const std::string& operand = cl.files.at(1);
  if (action == "show") {
    std::fputs(builtinModel(operand).text.c_str(), stdout);
    return 0;
  }
  if (action != "check") {
    throw InputError("gpufuzz model: unknown action '" + action +
                     "' (expected check FILE or show NAME)");
  }
  const LifecycleModel& model =
      isBuiltinModelName(operand) ? builtinModel(operand) : loadModelFile(operand);
  for (const std::string& w : model.warnings)
    std::fprintf(stderr, "%s\n", w.c_str());
  if (!cl.value<Option::Quiet>()) std::fputs(model.describe().c_str(), stdout);
  return 0;
}

}  // namespace gpufuzz
