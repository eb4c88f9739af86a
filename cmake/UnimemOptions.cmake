# Compile options shared by every unimem target, carried by the interface target unimem_options.
add_library(unimem_options INTERFACE)
target_compile_options(unimem_options INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>)
if(UNIMEM_WARNINGS_AS_ERRORS)
  target_compile_options(unimem_options INTERFACE -Werror)
endif()

# Invariant checks are PUBLIC so that tests compiled against the library always see the same value.
if(UNIMEM_INVARIANT_CHECKS OR CMAKE_BUILD_TYPE STREQUAL "Debug")
  target_compile_definitions(unimem_options INTERFACE UNIMEM_CHECK_INVARIANTS=1)
endif()

set(UNIMEM_SANITIZER_FLAGS "")
if(UNIMEM_SANITIZE_ADDRESS)
  set(UNIMEM_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
elseif(UNIMEM_SANITIZE_THREAD)
  set(UNIMEM_SANITIZER_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
endif()
if(UNIMEM_SANITIZER_FLAGS)
  target_compile_options(unimem_options INTERFACE ${UNIMEM_SANITIZER_FLAGS})
  target_link_options(unimem_options INTERFACE ${UNIMEM_SANITIZER_FLAGS})
endif()
