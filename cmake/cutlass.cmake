# CUTLASS/CuTe headers come from the pinned PyPI wheel nvidia-cutlass==4.2.0.0, unpacked by
# scripts/setup.sh into .deps/cutlass. FASTINFER_CUTLASS_DIR (cache variable or environment)
# points elsewhere. Nothing is vendored.
if(NOT FASTINFER_CUTLASS_DIR AND DEFINED ENV{FASTINFER_CUTLASS_DIR})
  set(FASTINFER_CUTLASS_DIR "$ENV{FASTINFER_CUTLASS_DIR}")
endif()
if(NOT FASTINFER_CUTLASS_DIR)
  set(FASTINFER_CUTLASS_DIR "${PROJECT_SOURCE_DIR}/.deps/cutlass/include")
endif()
if(NOT EXISTS "${FASTINFER_CUTLASS_DIR}/cute/tensor.hpp")
  message(FATAL_ERROR "CUTLASS/CuTe headers not found in '${FASTINFER_CUTLASS_DIR}'. "
                      "Run scripts/setup.sh or set FASTINFER_CUTLASS_DIR.")
endif()
message(STATUS "fastinfer: CUTLASS headers from ${FASTINFER_CUTLASS_DIR}")
add_library(fastinfer_cutlass INTERFACE)
target_include_directories(fastinfer_cutlass SYSTEM INTERFACE
  "$<BUILD_INTERFACE:${FASTINFER_CUTLASS_DIR}>"
  "$<BUILD_INTERFACE:${FASTINFER_CUTLASS_DIR}/../tools/util/include>")
