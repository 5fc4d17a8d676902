# mm_bf16_fp4 (owner: fp4): public entry, prepared weights, runner + tactics, small-M kernels, and
# the GEMM CPU reference. The large-M path has its own list (large_m.cmake).
target_sources(fastinfer PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/mm_bf16_fp4.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mm_runner.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mm_tunable.cpp
  ${CMAKE_CURRENT_LIST_DIR}/weights.cpp
  ${CMAKE_CURRENT_LIST_DIR}/small_m_dispatch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/small_m_repack.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/small_m_t1.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/small_m_t2.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/small_m_t4.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/small_m_t8.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/small_m_persistent_t1.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/small_m_persistent_t2.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/small_m_persistent_t4.cu
  ${CMAKE_CURRENT_LIST_DIR}/instantiations/mid_m.cu
  ${PROJECT_SOURCE_DIR}/src/ref/gemm_ref.cpp)
target_sources(fastinfer PRIVATE ${CMAKE_CURRENT_LIST_DIR}/large_m_bridge.cpp)
# The runner offers the large-M tactics when their list is part of the tree.
if(FASTINFER_WITH_LARGE_M AND EXISTS ${CMAKE_CURRENT_LIST_DIR}/large_m.cmake)
  # Source properties are per directory: name the directory of the target that compiles it.
  set_property(SOURCE ${CMAKE_CURRENT_LIST_DIR}/large_m_bridge.cpp TARGET_DIRECTORY fastinfer
               APPEND PROPERTY COMPILE_DEFINITIONS FASTINFER_WITH_LARGE_M=1)
endif()
