# ctest -R core_builds_alone: configure, build and run tests/core/alone.
foreach(step
    "${CMAKE_COMMAND};-S;${SOURCE};-B;${BINARY};-DCMAKE_BUILD_TYPE=Release"
    "${CMAKE_COMMAND};--build;${BINARY};-j2"
    "${BINARY}/core_alone")
  execute_process(COMMAND ${step} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "core alone: `${step}` failed (${rc})")
  endif()
endforeach()
