# The large-M path of mm_bf16_fp4 (owner: largem): decode pass + CUTLASS sm90a bf16 GEMM.
# One GEMM instantiation per .cu (each compiles in about a minute on one core).
target_sources(fastinfer PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/large_m/large_m.cpp
  ${CMAKE_CURRENT_LIST_DIR}/large_m/decode_nvfp4_sm90.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/bf16_gemm_coop_128x256_c2x1_bf16.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/bf16_gemm_coop_128x256_c2x1_fp16.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/bf16_gemm_coop_128x128_c1x2_bf16.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/bf16_gemm_coop_128x128_c1x2_fp16.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/bf16_gemm_pingpong_64x256_c1x1_bf16.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/bf16_gemm_pingpong_64x256_c1x1_fp16.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t256_k1.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t128_k1.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t64_k1.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t256_k2.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t128_k2.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t128_k4.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t64_k4.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t256_k1_pp.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t128_k1_pp.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t256_k1_il.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t128_k1_il.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t64_k1_il.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t256_k2_il.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t128_k2_il.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t256_sk.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t256_sk_il.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t128_sk.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t128_sk_il.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t64_sk.cu
  ${CMAKE_CURRENT_LIST_DIR}/large_m/instantiations/fused_wgmma_t64_sk_il.cu)
