# NVFP4 quantizer: codec and reference tests (CPU), kernel-vs-reference tests (GPU).
fastinfer_add_test(nvfp4_tests SOURCES ${CMAKE_CURRENT_LIST_DIR}/nvfp4_ref_test.cpp ${CMAKE_CURRENT_LIST_DIR}/nvfp4_api_test.cpp)
fastinfer_add_test(nvfp4_gpu_tests GPU SOURCES ${CMAKE_CURRENT_LIST_DIR}/nvfp4_gpu_test.cu)
