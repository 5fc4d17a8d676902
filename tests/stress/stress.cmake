# Concurrency stress of every op (owner: proof): 8 threads x 4 streams, bit-identical to solo runs.
# SERIAL: it checks that device free memory stays flat, which parallel tests would disturb.
fastinfer_add_test(stress_gpu_tests GPU SERIAL SOURCES ${CMAKE_CURRENT_LIST_DIR}/stress_gpu_test.cu)
