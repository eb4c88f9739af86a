# Turns a text file into a C++ source defining `const char unimem::examples::embedded::<SYMBOL>[]`
# holding the file's text. Used to embed the OpenCL C kernels of examples/ at build time.
# Usage: cmake -DINPUT=file.cl -DOUTPUT=file.cpp -DSYMBOL=name -P EmbedText.cmake
file(READ "${INPUT}" _text)
string(FIND "${_text}" ")unimem_cl\"" _clash)
if(NOT _clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )unimem_cl\"")
endif()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/EmbedText.cmake; do not edit.\n"
  "namespace unimem::examples::embedded {\n"
  "extern const char ${SYMBOL}[];\n"
  "const char ${SYMBOL}[] = R\"unimem_cl(${_text})unimem_cl\";\n"
  "}  // namespace unimem::examples::embedded\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
