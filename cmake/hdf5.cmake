# Parallel HDF5 for the MPI in use, as the interface target iotame_hdf5 (include directories, libraries,
# definitions) and IOTAME_HDF5_INCLUDE_DIRS (the runtime takes only HDF5's headers), or a fatal error naming what
# was tried.
#
# 1. find_package(HDF5 COMPONENTS C), preferring the parallel build: what Spack, Cray and module-provided HDF5
#    builds offer (HDF5_ROOT, HDF5_DIR, or h5pcc on the PATH). Refused when it is serial, or when its compiler
#    wrapper or its paths name the other MPI.
# 2. Debian's pkg-config names for the same MPI (hdf5-mpich / hdf5-mpi, hdf5-openmpi).
# RATIONALE: only the HDF5 of the same MPI: another one's flags name its own mpi.h directory and MPI library
# (hdf5-mpich: -I.../mpich -lmpich), so an Open MPI build silently compiled against MPICH's mpi.h (int handles
# where Open MPI has pointers) and loaded both libraries. hdf5-mpi is Debian's alternative, set by
# update-alternatives for one MPI only, so it is tried for MPICH (the pinned default) and unknown MPIs alone.

set(IOTAME_HDF5_SOURCE "")
if(IOTAME_MPI STREQUAL "openmpi")
  set(_iotame_other_mpi "mpich")
  set(_iotame_hdf5_modules hdf5-openmpi)
  if(NOT HDF5_C_COMPILER_EXECUTABLE AND EXISTS /usr/bin/h5pcc.openmpi)   # Debian's h5pcc may be another MPI's
    set(HDF5_C_COMPILER_EXECUTABLE /usr/bin/h5pcc.openmpi)
  endif()
elseif(IOTAME_MPI STREQUAL "mpich")
  set(_iotame_other_mpi "openmpi|ompi")
  set(_iotame_hdf5_modules hdf5-mpich hdf5-mpi)
else()
  set(_iotame_other_mpi "^$")
  set(_iotame_hdf5_modules hdf5-mpi)
endif()

set(HDF5_PREFER_PARALLEL TRUE)
find_package(HDF5 COMPONENTS C QUIET)
if(HDF5_FOUND)
  set(_iotame_show "")
  if(HDF5_C_COMPILER_EXECUTABLE)
    execute_process(COMMAND ${HDF5_C_COMPILER_EXECUTABLE} -show OUTPUT_VARIABLE _iotame_show ERROR_QUIET)
  endif()
  string(TOLOWER "${_iotame_show};${HDF5_C_INCLUDE_DIRS};${HDF5_C_LIBRARIES}" _iotame_h5where)
  if(NOT HDF5_IS_PARALLEL)
    message(STATUS "iotame: HDF5 ${HDF5_VERSION} from find_package is serial: not used")
  elseif(_iotame_h5where MATCHES "(^|[/;. -])(${_iotame_other_mpi})([/;. -]|$)")
    message(STATUS "iotame: HDF5 ${HDF5_VERSION} from find_package is built for another MPI: not used")
  else()
    add_library(iotame_hdf5 INTERFACE)
    target_include_directories(iotame_hdf5 INTERFACE ${HDF5_C_INCLUDE_DIRS})
    target_compile_definitions(iotame_hdf5 INTERFACE ${HDF5_C_DEFINITIONS})
    target_link_libraries(iotame_hdf5 INTERFACE ${HDF5_C_LIBRARIES})
    set(IOTAME_HDF5_INCLUDE_DIRS ${HDF5_C_INCLUDE_DIRS})
    set(IOTAME_HDF5_SOURCE "find_package(HDF5) ${HDF5_VERSION}")
  endif()
endif()

if(NOT IOTAME_HDF5_SOURCE)
  pkg_search_module(HDF5PC QUIET IMPORTED_TARGET ${_iotame_hdf5_modules})
  if(HDF5PC_FOUND)
    add_library(iotame_hdf5 INTERFACE)
    target_link_libraries(iotame_hdf5 INTERFACE PkgConfig::HDF5PC)
    set(IOTAME_HDF5_INCLUDE_DIRS ${HDF5PC_INCLUDE_DIRS})
    set(IOTAME_HDF5_SOURCE "pkg-config ${HDF5PC_MODULE_NAME} ${HDF5PC_VERSION}")
  endif()
endif()

if(NOT IOTAME_HDF5_SOURCE)
  message(FATAL_ERROR "no parallel HDF5 for ${IOTAME_MPI}: find_package(HDF5 COMPONENTS C) found none for it "
                      "(set HDF5_ROOT or HDF5_C_COMPILER_EXECUTABLE to its h5pcc), nor pkg-config "
                      "(${_iotame_hdf5_modules}); install one, or configure with -DIOTAME_HDF5=OFF to build "
                      "without the HDF5 parts")
endif()
message(STATUS "iotame: parallel HDF5 from ${IOTAME_HDF5_SOURCE}")
