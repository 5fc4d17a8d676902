# CUDA-graph capture and replay of every op (owner: proof).
fastinfer_add_test(graph_gpu_tests GPU SOURCES ${CMAKE_CURRENT_LIST_DIR}/graph_gpu_test.cu)
