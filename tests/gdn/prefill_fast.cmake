# Tests of the warp-specialised GDN prefill kernel: its triangular inverse replayed on the CPU,
# and the kernel on the GPU vs the fp64 oracle.
fastinfer_add_test(gdn_prefill_fast_tests SOURCES ${CMAKE_CURRENT_LIST_DIR}/prefill_fast_inverse_test.cu)
fastinfer_add_test(gdn_prefill_fast_gpu_tests GPU SOURCES ${CMAKE_CURRENT_LIST_DIR}/prefill_fast_gpu_test.cu)
