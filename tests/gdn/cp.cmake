# GDN context-parallel prefill: CPU tests of the plan and the stage references; GPU tests of the
# stage kernels and of the whole pipeline (stages 1-4).
fastinfer_add_test(gdn_cp_tests SOURCES ${CMAKE_CURRENT_LIST_DIR}/cp_ref_test.cpp)
fastinfer_add_test(gdn_cp_gpu_tests GPU SOURCES ${CMAKE_CURRENT_LIST_DIR}/cp_gpu_test.cu
  ${CMAKE_CURRENT_LIST_DIR}/cp_prefill_gpu_test.cu)
