# GDN decode / MTP (issue 7): public entry, validation, runner, kernels and the CPU reference.
target_sources(fastinfer PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/decode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decode_validate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decode_runner.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decode_tunable.cpp
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/decode_bf16_f32state.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/decode_bf16_bf16state.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/decode_fp16_f32state.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/decode_fp16_bf16state.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/decode_bf16_f32state_pipelined.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/decode_bf16_bf16state_pipelined.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/decode_fp16_f32state_pipelined.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/decode_fp16_bf16state_pipelined.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/decode_bf16_bf16state_chunked.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/decode_fp16_bf16state_chunked.cu
  ${PROJECT_SOURCE_DIR}/src/ref/gdn_decode_ref.cpp)
