# The install test: installs the build tree into a fresh prefix, checks that only the public
# headers (include/unimem/, with the device library unimem/team.h) are installed, then builds and runs the consumer project of
# tests/install/consumer twice against that prefix: with find_package(unimem) and with pkg-config.
#
#   cmake -DBUILD=<build dir> -DWORK=<scratch dir> -DSOURCE=<consumer dir> -DCXX=<compiler>
#         [-DFLAGS=<extra compile/link flags, e.g. sanitizers>] -P check_install.cmake
cmake_minimum_required(VERSION 3.25)
foreach(v BUILD WORK SOURCE CXX)
  if(NOT ${v})
    message(FATAL_ERROR "check_install.cmake: -D${v}= is required")
  endif()
endforeach()
separate_arguments(flags UNIX_COMMAND "${FLAGS}")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    string(REPLACE ";" " " command "${ARGN}")
    message(FATAL_ERROR "install test: '${command}' failed (${status}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${prefix})

# Only include/unimem/ may be installed: no header of src/ (internals stay out). unimem/team.h is
# the OpenCL C device library: kernels built by the installed library include it from there;
# unimem/unimem.h is the C API of the pointer layer.
if(NOT EXISTS ${prefix}/include/unimem/team.h)
  message(FATAL_ERROR "install test: the device library ${prefix}/include/unimem/team.h is missing")
endif()
file(GLOB_RECURSE installed_headers RELATIVE ${prefix}/include ${prefix}/include/*)
set(public_count 0)
foreach(h ${installed_headers})
  if(h STREQUAL "unimem/team.h")
    continue()
  endif()
  # The one-pointer C API (src/pointer/): a C header, usable from C and C++.
  if(h STREQUAL "unimem/unimem.h")
    math(EXPR public_count "${public_count} + 1")
    continue()
  endif()
  if(NOT h MATCHES "^unimem/[a-z_]+\\.hpp$")
    message(FATAL_ERROR "install test: ${prefix}/include/${h} is not a public header")
  endif()
  file(STRINGS ${prefix}/include/${h} includes REGEX "#[ \t]*include[ \t]*\"")
  if(includes)
    message(FATAL_ERROR "install test: ${h} includes a header by quotes (internals?): ${includes}")
  endif()
  math(EXPR public_count "${public_count} + 1")
endforeach()
# The installed command finds the installed device library (from its own path, so a prefix other
# than the configured one works).
if(EXISTS ${prefix}/bin/unimem)
  run(${prefix}/bin/unimem about)
  if(NOT last_output MATCHES "Device library \\(<unimem/team.h>\\): ${prefix}/include")
    message(FATAL_ERROR "install test: the installed unimem does not use ${prefix}/include:\n${last_output}")
  endif()
endif()
file(GLOB libdirs ${prefix}/lib*)
list(GET libdirs 0 libdir)

# 1. CMake package.
run(${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/cmake-build -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_CXX_COMPILER=${CXX} "-DCMAKE_CXX_FLAGS=${FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${FLAGS}"
    -DCMAKE_BUILD_RPATH=${libdir})
run(${CMAKE_COMMAND} --build ${WORK}/cmake-build)
run(${WORK}/cmake-build/unimem_consumer)
message("find_package consumer: ${last_output}")

# 2. pkg-config.
find_program(PKG_CONFIG pkg-config REQUIRED)
set(ENV{PKG_CONFIG_PATH} ${libdir}/pkgconfig)
run(${PKG_CONFIG} --cflags --libs unimem)
string(STRIP "${last_output}" pc_flags)
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
run(${CXX} ${flags} ${SOURCE}/main.cpp ${pc_flags} -Wl,-rpath,${libdir} -o ${WORK}/pc_consumer)
run(${WORK}/pc_consumer)
message("pkg-config consumer: ${last_output}")
message("install test: ${public_count} public headers installed, none from src/; both consumers ran")
