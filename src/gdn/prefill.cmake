# GDN prefill (issue 5): public entry, validation, runner, the warp-specialised kernel's
# instantiations, the chunk table for precomputed inverses, and the CPU references it is tested
# against (also the CPU path).
target_sources(fastinfer PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/prefill.cpp
  ${CMAKE_CURRENT_LIST_DIR}/prefill_validate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/prefill_runner.cpp
  ${CMAKE_CURRENT_LIST_DIR}/prefill_inverse.cpp
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/prefill_fast_bf16.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/prefill_fast_fp16.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/prefill_fast_chunk_rows.cu
  ${CMAKE_CURRENT_LIST_DIR}/prefill_short_runner.cpp
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/prefill_short_bf16.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/prefill_short_fp16.cu
  ${CMAKE_CURRENT_LIST_DIR}/../ref/gdn_ref.cpp)
