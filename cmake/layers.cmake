# One static library per layer (and per model area), linked only downward:
#
#   core (0) -> models (1) -> algorithms (2) -> systems (3) -> runtime (4) -> tools (5)
#
# The build enforces it. A target compiles with the headers of itself and of
# the targets it links, and nothing else: each target gets its own include
# tree in the build directory (include/<target>/<folder>/<header>, symbolic
# links to its own headers), and the source tree itself is never an include
# directory. Including a header of a target that is not a dependency is "No
# such file"; a dependency on a higher layer, or on a target not declared
# before (which would allow a cycle), stops the configuration with an error.
# scripts/check-format.sh rejects relative includes, the only way around it.
#
#   fabricvp_layer(<target> LAYER <core|models|algorithms|systems|runtime|tools>
#                  DIR <folder> [FILES <names>...] [DEPENDS <targets>...])
#
# FILES lists the target's files in DIR without extension (default: every
# .cpp and .h in DIR); DEPENDS its fabricvp targets (others, such as
# PkgConfig::SYSTEMC, are linked with target_link_libraries as usual).

set(FABRICVP_LAYERS core models algorithms systems runtime tools)

function(fabricvp_layer target)
  cmake_parse_arguments(L "" "LAYER;DIR" "FILES;DEPENDS" ${ARGN})
  list(FIND FABRICVP_LAYERS "${L_LAYER}" rank)
  if(rank LESS 0)
    message(FATAL_ERROR "${target}: unknown layer '${L_LAYER}' (${FABRICVP_LAYERS})")
  endif()
  set(dir ${CMAKE_SOURCE_DIR}/${L_DIR})
  if(L_FILES)
    set(sources "")
    set(headers "")
    foreach(f ${L_FILES})
      if(EXISTS ${dir}/${f}.cpp)
        list(APPEND sources ${dir}/${f}.cpp)
      endif()
      if(EXISTS ${dir}/${f}.h)
        list(APPEND headers ${dir}/${f}.h)
      endif()
      if(NOT EXISTS ${dir}/${f}.cpp AND NOT EXISTS ${dir}/${f}.h)
        message(FATAL_ERROR "${target}: neither ${L_DIR}/${f}.cpp nor .h exists")
      endif()
    endforeach()
  else()
    file(GLOB sources CONFIGURE_DEPENDS ${dir}/*.cpp)
    file(GLOB headers CONFIGURE_DEPENDS ${dir}/*.h)
  endif()
  foreach(dep ${L_DEPENDS})
    if(NOT TARGET ${dep})
      message(FATAL_ERROR "${target} depends on ${dep}, which is not declared before it "
                          "(declare targets bottom-up: a dependency on a later target could close a cycle)")
    endif()
    get_target_property(dep_rank ${dep} FABRICVP_LAYER_RANK)
    if(dep_rank STREQUAL "dep_rank-NOTFOUND")
      message(FATAL_ERROR "${target} depends on ${dep}, which is not a fabricvp layer target")
    endif()
    if(dep_rank GREATER rank)
      list(GET FABRICVP_LAYERS ${dep_rank} dep_layer)
      message(FATAL_ERROR "${target} (layer ${L_LAYER}) must not depend on ${dep} (layer ${dep_layer}): "
                          "layers depend only downward (${FABRICVP_LAYERS})")
    endif()
  endforeach()

  # The target's own headers, as its dependents (and its own sources) include them.
  set(tree ${CMAKE_BINARY_DIR}/include/${target})
  file(REMOVE_RECURSE ${tree})
  foreach(h ${headers})
    get_filename_component(name ${h} NAME)
    file(MAKE_DIRECTORY ${tree}/${L_DIR})
    file(CREATE_LINK ${h} ${tree}/${L_DIR}/${name} SYMBOLIC)
  endforeach()

  if(sources)
    add_library(${target} STATIC ${sources} ${headers})
    target_include_directories(${target} PUBLIC ${tree})
    target_link_libraries(${target} PUBLIC ${L_DEPENDS})
  else()
    add_library(${target} INTERFACE ${headers})
    target_include_directories(${target} INTERFACE ${tree})
    target_link_libraries(${target} INTERFACE ${L_DEPENDS})
  endif()
  set_target_properties(${target} PROPERTIES FABRICVP_LAYER_RANK ${rank})
endfunction()
