# Helpers that keep the layers apart (docs/architecture.md).

# Warnings for our own targets only, not for the dependencies they include.
function(latest_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
  # GCC 12 warns -Wrestrict inside libstdc++'s own std::string code at -O3
  # (GCC bug 105329, fixed in 13): a false positive on every string append.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
  endif()
endfunction()

# A static library of one layer of src/. It publishes only its own folder:
# a link build/include/<target>/<folder> -> src/<folder> is its include
# path, so a target sees another layer's headers only by linking it.
function(latest_layer target folder)
  add_library(${target} STATIC ${ARGN})
  set(root ${LATEST_INCLUDE_ROOT}/${target})
  get_filename_component(parent ${root}/${folder} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(CREATE_LINK ${LATEST_SOURCE_ROOT}/src/${folder} ${root}/${folder} SYMBOLIC)
  target_include_directories(${target} PUBLIC ${root})
  latest_warnings(${target})
endfunction()
