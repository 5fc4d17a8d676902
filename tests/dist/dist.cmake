# Multi-GPU GDN prefill (issue 10): CPU tests of validation and of the rank-composition math;
# GPU test over 2 devices (needs NCCL and 2 GPUs; skips with a message otherwise).
fastinfer_add_test(gdn_dist_tests SOURCES ${CMAKE_CURRENT_LIST_DIR}/dist_test.cpp)
fastinfer_add_test(gdn_dist_gpu_tests GPU SOURCES ${CMAKE_CURRENT_LIST_DIR}/dist_gpu_test.cu)
