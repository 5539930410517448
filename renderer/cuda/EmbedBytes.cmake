# EmbedBytes.cmake: writes a C++ source defining a byte array with a file's contents, so a binary
# carries its device code without depending on xxd or bin2c being installed.
# Usage: cmake -DINPUT=file -DOUTPUT=file.cpp -DHEADER=path.h -DNAMESPACE=ns -DSYMBOL=name -P EmbedBytes.cmake
# HEADER declares `extern const unsigned char SYMBOL[]` and `extern const std::size_t SYMBOLSize`.
foreach(var INPUT OUTPUT HEADER NAMESPACE SYMBOL)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "EmbedBytes.cmake: ${var} is not set")
  endif()
endforeach()

file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" digits)
if(digits EQUAL 0)
  message(FATAL_ERROR "EmbedBytes.cmake: ${INPUT} is empty")
endif()
# Sixteen bytes a line keeps the generated file readable in a diff or a debugger.
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# CMake's regular expressions have no {n}: spell the sixteen bytes out.
string(REPEAT "0x[0-9a-f][0-9a-f]," 16 line)
string(REGEX REPLACE "(${line})" "\\1\n    " bytes "${bytes}")

get_filename_component(input_name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp"
     "// Generated from ${input_name} by EmbedBytes.cmake; do not edit.\n"
     "#include \"${HEADER}\"\n\n"
     "namespace ${NAMESPACE} {\n\n"
     "// Aligned because the driver parses the image in place.\n"
     "alignas(64) const unsigned char ${SYMBOL}[] = {\n    ${bytes}\n};\n"
     "const std::size_t ${SYMBOL}Size = sizeof(${SYMBOL});\n\n"
     "}  // namespace ${NAMESPACE}\n")
# Only a changed image touches the output, so an unchanged kernel recompiles nothing downstream.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
