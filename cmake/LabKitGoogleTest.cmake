# GoogleTest: the installed package when there is one, else a pinned release.
#
# Offline machines without an installed GoogleTest can point CMake at an unpacked
# release: -DFETCHCONTENT_SOURCE_DIR_GOOGLETEST=/path/to/googletest-1.14.0
include(FetchContent)
set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
FetchContent_Declare(googletest
  URL https://github.com/google/googletest/archive/refs/tags/v1.14.0.tar.gz
  URL_HASH SHA256=8ad598c73ad796e0d8280b082cebd82a630d73e73cd3c70057938a6501bba5d7
  DOWNLOAD_EXTRACT_TIMESTAMP ON
  FIND_PACKAGE_ARGS NAMES GTest)
FetchContent_MakeAvailable(googletest)
if(NOT TARGET GTest::gtest)
  message(FATAL_ERROR "GoogleTest was neither found nor fetched. Install it (Debian: libgtest-dev) "
                      "or pass -DFETCHCONTENT_SOURCE_DIR_GOOGLETEST=<unpacked googletest source>.")
endif()
