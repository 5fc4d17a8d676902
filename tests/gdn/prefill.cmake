# GDN prefill tests: CPU (references, API semantics, validation, the kernel's triangular inverse
# replayed thread by thread) and GPU (gdn::prefill and its kernel variants vs the fp64 oracle).
fastinfer_add_test(gdn_prefill_tests SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/prefill_ref_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/prefill_validate_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/prefill_fast_inverse_test.cu
  ${CMAKE_CURRENT_LIST_DIR}/prefill_head_groups_test.cpp)
fastinfer_add_test(gdn_prefill_gpu_tests GPU SOURCES ${CMAKE_CURRENT_LIST_DIR}/prefill_gpu_test.cu)
fastinfer_add_test(gdn_prefill_head_groups_gpu_tests GPU SOURCES ${CMAKE_CURRENT_LIST_DIR}/prefill_head_groups_gpu_test.cu)
fastinfer_add_test(gdn_prefill_short_gpu_tests GPU SOURCES ${CMAKE_CURRENT_LIST_DIR}/prefill_short_gpu_test.cu)
