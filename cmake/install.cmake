# install + export so another CMake project can find_package(fastinfer) and link fastinfer::fastinfer.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS fastinfer EXPORT fastinfer-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/fastinfer DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES "${PROJECT_BINARY_DIR}/include/fastinfer/build_info.h" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fastinfer)
install(EXPORT fastinfer-targets NAMESPACE fastinfer:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fastinfer)
configure_package_config_file(cmake/fastinfer-config.cmake.in
  "${PROJECT_BINARY_DIR}/fastinfer-config.cmake"
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fastinfer)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/fastinfer-config-version.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/fastinfer-config.cmake" "${PROJECT_BINARY_DIR}/fastinfer-config-version.cmake"
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fastinfer)
