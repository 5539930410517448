// BuiltinModels.h: the texts of the built-in models (model/models/*.model), compiled in by CMake
// so that every program has them without a file beside it.
#pragma once

#include <span>
#include <string_view>

namespace gpufuzz {

struct BuiltinModelText {
  std::string_view name;  // the file's name without .model
  std::string_view text;
};

/// Every built-in model, in the order `model show` lists them.
std::span<const BuiltinModelText> builtinModelTexts();

}  // namespace gpufuzz
