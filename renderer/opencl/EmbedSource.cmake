# EmbedSource.cmake: writes OUTPUT, a C++ file defining `const char SYMBOL[]` in NAMESPACE as the
# text of INPUT with each `#include "PATH"` line whose PATH exists under ROOT replaced by that
# file's text (one level), so that a runtime compiler gets one self-contained string.
file(READ ${INPUT} text)
string(REGEX MATCHALL "#include \"[^\"]+\"" includes "${text}")
foreach(line IN LISTS includes)
  string(REGEX REPLACE "#include \"([^\"]+)\"" "\\1" path "${line}")
  if(EXISTS ${ROOT}/${path})
    file(READ ${ROOT}/${path} included)
    string(REPLACE "${line}" "// ${path}, inlined by EmbedSource.cmake\n${included}" text "${text}")
  endif()
endforeach()
if(text MATCHES "\\)gpufuzz_source\"")
  message(FATAL_ERROR "EmbedSource: ${INPUT} contains the raw string delimiter")
endif()
file(WRITE ${OUTPUT}.tmp
     "// Generated from ${INPUT} by EmbedSource.cmake; do not edit.\n"
     "#include \"${HEADER}\"\n\nnamespace ${NAMESPACE} {\n\n"
     "const char ${SYMBOL}[] = R\"gpufuzz_source(${text})gpufuzz_source\";\n\n}\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
