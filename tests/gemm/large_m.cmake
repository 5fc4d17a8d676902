# Tests of the large-M mm_bf16_fp4 path (owner: largem).
fastinfer_add_test(gemm_large_m_tests SOURCES ${CMAKE_CURRENT_LIST_DIR}/large_m_test.cpp)
fastinfer_add_test(gemm_large_m_gpu_tests GPU SOURCES ${CMAKE_CURRENT_LIST_DIR}/large_m_gpu_test.cu)
