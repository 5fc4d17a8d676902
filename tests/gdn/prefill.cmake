# GDN prefill tests: CPU (references, API semantics, validation) and GPU (kernel vs fp64 oracle).
fastinfer_add_test(gdn_prefill_tests SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/prefill_ref_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/prefill_validate_test.cpp)
fastinfer_add_test(gdn_prefill_gpu_tests GPU SOURCES ${CMAKE_CURRENT_LIST_DIR}/prefill_gpu_test.cu)
