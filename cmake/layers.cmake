# The layers of unimem (DESIGN.md, docs/ARCHITECTURE.md) and which layers each may use. This table
# is the one place the rule lives: the build reads it to link each layer's target to the layers it
# uses, and the layering test (tests/layering/check_layers.cmake) reads it to reject any
# `#include "<layer>/..."` of a layer that a file's own layer may not use.
#
# Each entry is "layer:used,used,...": a layer may include its own headers and those of the layers
# it uses, directly or through them (the closure). `public` is include/unimem/ (the installed
# headers: usable everywhere); files directly in src/ (version.*) belong to `common`. Sub-layers
# (device/opencl, analysis/llvm) are separate: using `device` does not grant `device/opencl`.
set(UNIMEM_LAYER_RULES
  "public:"
  "common:public"
  "region:common"
  "device:region"
  "device/host:device"
  "device/opencl:device"
  "device/sim:device"
  "memory:device"
  "coherence:memory"
  "analysis:device"
  "analysis/isl:analysis"
  "analysis/llvm:analysis/isl"
  "schedule:analysis,coherence"
  "api:schedule"
  "api/drivers:api,device/opencl,device/sim"
  "platform:api,device/opencl,device/sim"
  "pointer:api"
  "selftest:api,device/host,device/sim,pointer"
  "tools:selftest,pointer,api,device/host,device/opencl,device/sim,analysis/llvm")

# unimem_layer_uses(<layer> <out-var>): the layers <layer> may use, directly or indirectly, itself
# included. Fails on a layer the table does not know.
function(unimem_layer_uses layer out)
  set(result "")
  set(pending ${layer})
  while(pending)
    list(POP_FRONT pending current)
    if(current IN_LIST result)
      continue()
    endif()
    set(found FALSE)
    foreach(rule ${UNIMEM_LAYER_RULES})
      string(REPLACE ":" ";" parts "${rule}")
      list(GET parts 0 name)
      if(name STREQUAL current)
        set(found TRUE)
        list(LENGTH parts n)
        if(n GREATER 1)
          list(GET parts 1 used)
          string(REPLACE "," ";" used "${used}")
          list(APPEND pending ${used})
        endif()
      endif()
    endforeach()
    if(NOT found)
      message(FATAL_ERROR "cmake/layers.cmake: unknown layer '${current}'")
    endif()
    list(APPEND result ${current})
  endwhile()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# unimem_layer_direct_uses(<layer> <out-var>): the layers named in <layer>'s own entry.
function(unimem_layer_direct_uses layer out)
  set(result "")
  foreach(rule ${UNIMEM_LAYER_RULES})
    string(REPLACE ":" ";" parts "${rule}")
    list(GET parts 0 name)
    list(LENGTH parts n)
    if(name STREQUAL layer AND n GREATER 1)
      list(GET parts 1 used)
      string(REPLACE "," ";" result "${used}")
    endif()
  endforeach()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# unimem_layer_target(<layer> <out-var>): the CMake target of a layer (device/opencl ->
# unimem_device_opencl).
function(unimem_layer_target layer out)
  string(REPLACE "/" "_" id "${layer}")
  set(${out} unimem_${id} PARENT_SCOPE)
endfunction()

# unimem_add_layer(<layer> SOURCES ... [PUBLIC_LIBRARIES ...] [PRIVATE_LIBRARIES ...]
#                  [PUBLIC_DEFINITIONS ...])
# Adds the layer's OBJECT library, linked PUBLIC to the targets of the layers its table entry names
# (those built: an optional layer that is off is skipped) and to the given libraries. Layers are
# added bottom-up (src/CMakeLists.txt), so every used layer that is built exists already. The
# layer is recorded in the global property UNIMEM_BUILT_LAYERS; libunimem is made of all of them.
function(unimem_add_layer layer)
  cmake_parse_arguments(L "" "" "SOURCES;PUBLIC_LIBRARIES;PRIVATE_LIBRARIES;PUBLIC_DEFINITIONS"
                        ${ARGN})
  unimem_layer_target(${layer} target)
  if(NOT L_SOURCES)
    message(FATAL_ERROR "unimem_add_layer(${layer}): no SOURCES")
  endif()
  add_library(${target} OBJECT ${L_SOURCES})
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/src>)
  target_link_libraries(${target} PUBLIC unimem_options)
  get_property(built GLOBAL PROPERTY UNIMEM_BUILT_LAYERS)
  unimem_layer_direct_uses(${layer} uses)
  foreach(used ${uses})
    if(used STREQUAL "public")
      continue()  # headers only, on every layer's include path
    endif()
    if(used IN_LIST built)
      unimem_layer_target(${used} used_target)
      target_link_libraries(${target} PUBLIC ${used_target})
    endif()
  endforeach()
  if(L_PUBLIC_LIBRARIES)
    target_link_libraries(${target} PUBLIC ${L_PUBLIC_LIBRARIES})
  endif()
  if(L_PRIVATE_LIBRARIES)
    target_link_libraries(${target} PRIVATE ${L_PRIVATE_LIBRARIES})
  endif()
  if(L_PUBLIC_DEFINITIONS)
    target_compile_definitions(${target} PUBLIC ${L_PUBLIC_DEFINITIONS})
  endif()
  set_property(GLOBAL APPEND PROPERTY UNIMEM_BUILT_LAYERS ${layer})
endfunction()
