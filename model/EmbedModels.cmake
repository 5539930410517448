# EmbedModels.cmake: writes OUTPUT, a C++ file holding the text of each model file in MODELS
# (a ;-list), so that the built-in models need no file at run time.
set(body "")
foreach(path IN LISTS MODELS)
  get_filename_component(name "${path}" NAME_WE)
  file(READ "${path}" text)
  string(APPEND body "    {\"${name}\", R\"gpufuzz_model(${text})gpufuzz_model\"},\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "// Generated from model/models/*.model by model/EmbedModels.cmake.
#include \"model/BuiltinModels.h\"

namespace gpufuzz {
namespace {
constexpr BuiltinModelText kTexts[] = {
${body}};
}  // namespace

std::span<const BuiltinModelText> builtinModelTexts() {
  return kTexts;
}

}  // namespace gpufuzz
")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
