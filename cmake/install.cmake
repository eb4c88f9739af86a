# Installation: the shared library, the public headers (include/unimem/, nothing from
# src/), the `unimem` command, a CMake package (find_package(unimem) -> unimem::unimem) and a
# pkg-config file (unimem.pc).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS unimem_shared EXPORT unimemTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/unimem DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET unimem_cli)
  install(TARGETS unimem_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT unimemTargets NAMESPACE unimem:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/unimem)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/unimemConfig.cmake.in
  ${PROJECT_BINARY_DIR}/unimemConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/unimem)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/unimemConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/unimemConfig.cmake ${PROJECT_BINARY_DIR}/unimemConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/unimem)
configure_file(${PROJECT_SOURCE_DIR}/cmake/unimem.pc.in ${PROJECT_BINARY_DIR}/unimem.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/unimem.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
