# The methodology's sources, shared by the product build and the test that
# builds latest_core on its own (tests/core/alone).
set(LATEST_CORE_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/statistics.cpp
  ${CMAKE_CURRENT_LIST_DIR}/calibration.cpp
  ${CMAKE_CURRENT_LIST_DIR}/detection.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pooled_detection.cpp
  ${CMAKE_CURRENT_LIST_DIR}/planner.cpp
  ${CMAKE_CURRENT_LIST_DIR}/measurement_core.cpp
  ${CMAKE_CURRENT_LIST_DIR}/engine.cpp
  ${CMAKE_CURRENT_LIST_DIR}/schedules/stream_request.cpp
  ${CMAKE_CURRENT_LIST_DIR}/schedules/paper_schedule.cpp
  ${CMAKE_CURRENT_LIST_DIR}/schedules/chained_schedule.cpp
  ${CMAKE_CURRENT_LIST_DIR}/route_measurement.cpp
  ${CMAKE_CURRENT_LIST_DIR}/accuracy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/selftest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/watch/clock_steps.cpp
  ${CMAKE_CURRENT_LIST_DIR}/watch/watch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/watch/detector_judge.cpp)
# The pooled detector never reads errno: with errno each of its square roots
# is a compare and a branch to libm more, in the loop over every record a
# fine scan reads (about a sixth of its host time; docs/benchmarks.md).
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/pooled_detection.cpp PROPERTIES COMPILE_OPTIONS -fno-math-errno)
