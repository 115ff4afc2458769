# GoogleTest: the installed package when there is one, else a pinned release.
#
# Offline machines without an installed GoogleTest can point CMake at an unpacked
# release: -DFETCHCONTENT_SOURCE_DIR_GOOGLETEST=/path/to/googletest-1.14.0
include(FetchContent)
set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
set(LABKIT_GOOGLETEST_URL https://github.com/google/googletest/archive/refs/tags/v1.14.0.tar.gz
    CACHE STRING "Where the pinned GoogleTest release is downloaded from when none is installed")
set(LABKIT_GOOGLETEST_SHA256 8ad598c73ad796e0d8280b082cebd82a630d73e73cd3c70057938a6501bba5d7)
string(CONCAT LABKIT_GOOGLETEST_HINT "install it (Debian: libgtest-dev) or pass "
       "-DFETCHCONTENT_SOURCE_DIR_GOOGLETEST=<an unpacked googletest-1.14.0 source>")

find_package(GTest QUIET)
set(labkit_googletest_source ${LABKIT_GOOGLETEST_URL})
if(NOT GTest_FOUND AND NOT FETCHCONTENT_SOURCE_DIR_GOOGLETEST)
  # Fetched here rather than by FetchContent, so that an offline machine gets the kit's
  # hint within seconds instead of CMake's raw download error after minutes of retries.
  set(archive ${CMAKE_BINARY_DIR}/_deps/googletest-1.14.0.tar.gz)
  if(NOT EXISTS ${archive})
    message(STATUS "GoogleTest is not installed: downloading googletest 1.14.0")
    # (FetchContent checks the archive's SHA-256 below.)
    file(DOWNLOAD ${LABKIT_GOOGLETEST_URL} ${archive}.part STATUS got TIMEOUT 120 INACTIVITY_TIMEOUT 15)
    list(GET got 0 code)
    if(NOT code EQUAL 0)
      file(REMOVE ${archive}.part)
      list(GET got 1 why)
      message(FATAL_ERROR "GoogleTest is not installed and could not be downloaded (${why}): "
                          "${LABKIT_GOOGLETEST_HINT}.")
    endif()
    file(RENAME ${archive}.part ${archive})
  endif()
  set(labkit_googletest_source ${archive})
endif()
FetchContent_Declare(googletest
  URL ${labkit_googletest_source}
  URL_HASH SHA256=${LABKIT_GOOGLETEST_SHA256}
  DOWNLOAD_EXTRACT_TIMESTAMP ON
  FIND_PACKAGE_ARGS NAMES GTest)
FetchContent_MakeAvailable(googletest)
if(NOT TARGET GTest::gtest)
  message(FATAL_ERROR "GoogleTest was neither found nor fetched: ${LABKIT_GOOGLETEST_HINT}.")
endif()
