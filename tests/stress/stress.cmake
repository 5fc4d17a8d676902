# Concurrency stress of every op (owner: proof): 8 threads x 4 streams, bit-identical to solo runs.
fastinfer_add_test(stress_gpu_tests GPU SOURCES ${CMAKE_CURRENT_LIST_DIR}/stress_gpu_test.cu)
