# GDN decode / MTP tests: CPU semantics, validation and the tactic table (decode_tests), GPU vs
# the fp64 reference (decode_gpu_tests, label gpu).
fastinfer_add_test(decode_tests SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/decode_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decode_validation_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decode_tactics_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decode_chunk_math_test.cu
  ${CMAKE_CURRENT_LIST_DIR}/decode_tune_test.cpp)
fastinfer_add_test(decode_gpu_tests GPU SOURCES ${CMAKE_CURRENT_LIST_DIR}/decode_gpu_test.cu
  ${CMAKE_CURRENT_LIST_DIR}/decode_pipelined_gpu_test.cu)
