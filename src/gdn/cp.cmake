# GDN context-parallel prefill (issue 6): chunk plan, stage references, stage kernels, pipeline.
target_sources(fastinfer PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/cp_plan.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cp.cpp
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/cp_stages_bf16.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/cp_stages_fp16.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/cp_maps_fp16_operands.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/cp_maps_wgmma.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/cp_fixup.cu
  ${CMAKE_CURRENT_LIST_DIR}/../ref/gdn_cp_ref.cpp)
