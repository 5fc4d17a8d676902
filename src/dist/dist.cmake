# Multi-GPU context-parallel GDN prefill over NCCL (issue 10). NCCL is optional: with
# FASTINFER_WITH_NCCL=OFF (or no NCCL found) everything builds and the NCCL entry points throw.
find_path(FASTINFER_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
find_library(FASTINFER_NCCL_LIBRARY NAMES nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
if(FASTINFER_NCCL_INCLUDE_DIR AND FASTINFER_NCCL_LIBRARY)
  set(fastinfer_nccl_found ON)
else()
  set(fastinfer_nccl_found OFF)
endif()
option(FASTINFER_WITH_NCCL "Build the multi-GPU prefill with NCCL (ON when NCCL is found)" ${fastinfer_nccl_found})

target_sources(fastinfer PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/nccl_backend.cpp
  ${CMAKE_CURRENT_LIST_DIR}/validate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/prefill_distributed.cpp
  ${CMAKE_CURRENT_LIST_DIR}/affine_chain.cu
  ${CMAKE_CURRENT_LIST_DIR}/affine_chain_host.cpp)
if(FASTINFER_WITH_NCCL)
  if(NOT fastinfer_nccl_found)
    message(FATAL_ERROR "FASTINFER_WITH_NCCL=ON but nccl.h / libnccl were not found")
  endif()
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/nccl_backend.cpp PROPERTIES
    COMPILE_DEFINITIONS FASTINFER_WITH_NCCL=1 INCLUDE_DIRECTORIES "${FASTINFER_NCCL_INCLUDE_DIR}")
  # Linked dynamically: the toolkit's libnccl.so.2 (or the nvidia-nccl wheel's) at run time.
  target_link_libraries(fastinfer PRIVATE "${FASTINFER_NCCL_LIBRARY}")
  message(STATUS "fastinfer: NCCL ${FASTINFER_NCCL_LIBRARY}")
else()
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/nccl_backend.cpp PROPERTIES COMPILE_DEFINITIONS FASTINFER_WITH_NCCL=0)
  message(STATUS "fastinfer: without NCCL (multi-GPU prefill disabled)")
endif()
