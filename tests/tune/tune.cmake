# Autotuner tests: the host-only core with fake runners and a fake profiler (CPU), and the CUDA
# profiler with spin-kernel tactics (GPU).
fastinfer_add_test(tune_tests SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/buckets_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/scope_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/stale_runner_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tuner_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/persistence_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/concurrency_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/registry_test.cpp
  LIBS nlohmann_json::nlohmann_json)
fastinfer_add_test(tune_gpu_tests GPU SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/tune_gpu_test.cu)
