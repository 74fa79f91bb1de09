# Version check for `find_package(sieve <version>)` and `find_package(sieve <min>...<max>)`,
# installed beside sieveConfig.cmake. The rule is Cargo's (semver): 1.x.y serves any request
# 1.a.b <= 1.x.y; before 1.0 the minor version is the breaking one, so 0.1.x serves 0.1
# requests (and a bare `0`) but not 0.2. A range request accepts any version inside it.
#
# PACKAGE_VERSION must equal the workspace version in Cargo.toml (tests/tests/cxx_and_cmake.rs
# checks it).
set(PACKAGE_VERSION "0.1.0")

set(PACKAGE_VERSION_COMPATIBLE FALSE)
set(PACKAGE_VERSION_EXACT FALSE)

string(REPLACE "." ";" _sieve_parts "${PACKAGE_VERSION}")
list(GET _sieve_parts 0 _sieve_major)
list(GET _sieve_parts 1 _sieve_minor)

if(PACKAGE_FIND_VERSION_RANGE)
    # A range: inside [MIN, MAX] or [MIN, MAX).
    if(PACKAGE_VERSION VERSION_GREATER_EQUAL PACKAGE_FIND_VERSION_MIN
       AND ((PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "INCLUDE"
             AND PACKAGE_VERSION VERSION_LESS_EQUAL PACKAGE_FIND_VERSION_MAX)
            OR (PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "EXCLUDE"
                AND PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MAX)))
        set(PACKAGE_VERSION_COMPATIBLE TRUE)
    endif()
elseif(NOT PACKAGE_FIND_VERSION)
    # No version requested.
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_VERSION VERSION_GREATER_EQUAL PACKAGE_FIND_VERSION
       AND _sieve_major EQUAL PACKAGE_FIND_VERSION_MAJOR
       AND (_sieve_major GREATER 0 OR PACKAGE_FIND_VERSION_COUNT EQUAL 1
            OR _sieve_minor EQUAL PACKAGE_FIND_VERSION_MINOR))
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
    if(PACKAGE_VERSION VERSION_EQUAL PACKAGE_FIND_VERSION)
        set(PACKAGE_VERSION_EXACT TRUE)
    endif()
endif()

unset(_sieve_parts)
unset(_sieve_major)
unset(_sieve_minor)
