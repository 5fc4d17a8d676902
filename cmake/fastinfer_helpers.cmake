# Flags for every CUDA translation unit of the library: sm_90a only, parallel nvcc, and the
# ptxas report so serialized-wgmma warnings (C7510) are seen and treated as bugs.
set(FASTINFER_CUDA_FLAGS
  -gencode=arch=compute_90a,code=sm_90a
  --expt-relaxed-constexpr
  --expt-extended-lambda
  --threads=1
  -Xptxas=--warn-on-spills
  -Xcudafe=--diag_suppress=177)

# Shared developer machines cap concurrent nvcc runs (scripts/compile-slot.sh; a no-op unless
# /tmp/fastinfer-compile-slots exists).
set(CMAKE_CUDA_COMPILER_LAUNCHER "${PROJECT_SOURCE_DIR}/scripts/compile-slot.sh")

function(fastinfer_cuda_target target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${FASTINFER_CUDA_FLAGS}>)
endfunction()

# fastinfer_add_test(<name> SOURCES ... [GPU] [SERIAL]) — one GoogleTest binary; tests are
# discovered at build time (listing needs no GPU). GPU tests carry the ctest label "gpu". SERIAL
# tests run alone under `ctest -j` (they measure device-wide facts such as free memory).
function(fastinfer_add_test name)
  cmake_parse_arguments(ARG "GPU;SERIAL" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE fastinfer::fastinfer fastinfer_internal GTest::gtest GTest::gtest_main ${ARG_LIBS})
  target_include_directories(${name} PRIVATE "${PROJECT_SOURCE_DIR}/tests")
  fastinfer_cuda_target(${name})
  set(label cpu)
  if(ARG_GPU)
    set(label gpu)
  endif()
  set(serial FALSE)
  if(ARG_SERIAL)
    set(serial TRUE)
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS ${label} RUN_SERIAL ${serial} DISCOVERY_TIMEOUT 60)
endfunction()
