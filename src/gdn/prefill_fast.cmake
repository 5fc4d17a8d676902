# Warp-specialised GDN prefill kernel (issue 5 performance): launches, params, instantiations.
# Not behind gdn::prefill yet; tests and the gdn_prefill_fast benchmark call run_prefill_fast.
target_sources(fastinfer PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/prefill_fast_launch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/prefill_fast_bf16.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/prefill_fast_fp16.cu)
