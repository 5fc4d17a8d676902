# mm_bf16_fp4 (owner: fp4): reference, API and validation tests (CPU); every tactic vs the
# reference on the issue's shape grid (GPU).
fastinfer_add_test(gemm_tests SOURCES ${CMAKE_CURRENT_LIST_DIR}/gemm_test.cpp)
fastinfer_add_test(gemm_gpu_tests GPU SOURCES ${CMAKE_CURRENT_LIST_DIR}/gemm_gpu_test.cu)
