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
# The OpenCL platform (`unimem run` finds it in ../lib next to bin/unimem) and its .icd file,
# which a system administrator may copy to /etc/OpenCL/vendors/ to offer the platform to every
# program.
if(TARGET unimem_opencl)
  set_target_properties(unimem_opencl PROPERTIES INSTALL_RPATH "$ORIGIN")
  install(TARGETS unimem_opencl LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(CODE "file(WRITE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SYSCONFDIR}/OpenCL/vendors/unimem.icd\"
    \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/libunimem_opencl.so\\n\")")
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
