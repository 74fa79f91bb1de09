# CMake package for libsieve (the sieve C API), for `find_package(sieve [0.1] REQUIRED)`
# (sieveConfigVersion.cmake beside this file checks the version). To build libsieve from the
# sources inside a CMake build instead, see ../CMakeLists.txt (`add_subdirectory`).
#
# Provides the imported target `sieve::sieve`: the static library `libsieve.a` (built by
# `cargo build -p sieve-ffi-c --release`) with `sieve.h`, `llguidance.h` and
# `llguidance_compat.h` on its include path and the system libraries a Rust staticlib needs
# (threads, dl, m) as link dependencies.
#
# Where it looks. Point CMAKE_PREFIX_PATH at this folder's parent (`ffi-c/`) or at an
# install prefix holding `lib/cmake/sieve/sieveConfig.cmake`; then:
#   SIEVE_LIBRARY      Full path to libsieve.a. Set it to skip the search.
#   SIEVE_LIB_DIR      A folder holding libsieve.a (searched first), e.g. target/release.
#   SIEVE_INCLUDE_DIR  The folder holding sieve.h. Default: `include/` of the source tree
#                      (ffi-c/include) or of the install prefix.
# Without SIEVE_LIBRARY the library is searched in SIEVE_LIB_DIR, each CMAKE_PREFIX_PATH
# entry itself and its lib/, $ENV{CARGO_TARGET_DIR}/release, the workspace's target/release,
# and <install prefix>/lib.
#
# Results: sieve_FOUND, SIEVE_LIBRARY, SIEVE_INCLUDE_DIR, the target sieve::sieve.

include(CMakeFindDependencyMacro)
find_dependency(Threads)

get_filename_component(_sieve_dir "${CMAKE_CURRENT_LIST_DIR}" ABSOLUTE)
# Source tree: <repo>/ffi-c/cmake. Install tree: <prefix>/lib/cmake/sieve.
get_filename_component(_sieve_src "${_sieve_dir}/.." ABSOLUTE)
get_filename_component(_sieve_prefix "${_sieve_dir}/../../.." ABSOLUTE)

if(NOT SIEVE_INCLUDE_DIR)
    find_path(SIEVE_INCLUDE_DIR sieve.h
        HINTS "${_sieve_src}/include" "${_sieve_prefix}/include"
        NO_DEFAULT_PATH)
endif()

if(NOT SIEVE_LIBRARY)
    set(_sieve_hints ${SIEVE_LIB_DIR} ${CMAKE_PREFIX_PATH})
    if(DEFINED ENV{CARGO_TARGET_DIR})
        list(APPEND _sieve_hints "$ENV{CARGO_TARGET_DIR}/release")
    endif()
    list(APPEND _sieve_hints "${_sieve_src}/../target/release" "${_sieve_prefix}/lib")
    find_library(SIEVE_LIBRARY NAMES libsieve.a
        HINTS ${_sieve_hints}
        PATH_SUFFIXES lib
        NO_DEFAULT_PATH)
    unset(_sieve_hints)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(sieve
    REQUIRED_VARS SIEVE_LIBRARY SIEVE_INCLUDE_DIR
    VERSION_VAR sieve_VERSION
    REASON_FAILURE_MESSAGE
        "build it with `cargo build -p sieve-ffi-c --release` or set SIEVE_LIBRARY")

if(sieve_FOUND AND NOT TARGET sieve::sieve)
    add_library(sieve::sieve STATIC IMPORTED)
    set_target_properties(sieve::sieve PROPERTIES
        IMPORTED_LOCATION "${SIEVE_LIBRARY}"
        IMPORTED_LINK_INTERFACE_LANGUAGES "C"
        INTERFACE_INCLUDE_DIRECTORIES "${SIEVE_INCLUDE_DIR}"
        INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS};m")
endif()

unset(_sieve_dir)
unset(_sieve_src)
unset(_sieve_prefix)
