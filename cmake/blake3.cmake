# BLAKE3: the official C implementation that Debian ships inside
# librust-blake3-dev. Built here as a small static library with its x86-64
# assembly kernels (runtime dispatch picks SSE2/SSE4.1/AVX2/AVX-512).
file(GLOB _blake3_dirs LIST_DIRECTORIES true /usr/share/cargo/registry/blake3-*/c)
list(SORT _blake3_dirs COMPARE NATURAL ORDER DESCENDING)
list(GET _blake3_dirs 0 BLAKE3_C_DIR)
if(NOT EXISTS "${BLAKE3_C_DIR}/blake3.h")
  message(FATAL_ERROR "BLAKE3 C sources not found; install librust-blake3-dev (packaging/install-deps)")
endif()
message(STATUS "BLAKE3 C sources: ${BLAKE3_C_DIR}")

set(_blake3_src ${BLAKE3_C_DIR}/blake3.c ${BLAKE3_C_DIR}/blake3_dispatch.c ${BLAKE3_C_DIR}/blake3_portable.c)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  list(APPEND _blake3_src
    ${BLAKE3_C_DIR}/blake3_sse2_x86-64_unix.S
    ${BLAKE3_C_DIR}/blake3_sse41_x86-64_unix.S
    ${BLAKE3_C_DIR}/blake3_avx2_x86-64_unix.S
    ${BLAKE3_C_DIR}/blake3_avx512_x86-64_unix.S)
  set(_blake3_defs)
else()
  set(_blake3_defs BLAKE3_NO_SSE2 BLAKE3_NO_SSE41 BLAKE3_NO_AVX2 BLAKE3_NO_AVX512)
endif()
add_library(blake3 STATIC ${_blake3_src})
target_include_directories(blake3 SYSTEM PUBLIC ${BLAKE3_C_DIR})
target_compile_definitions(blake3 PRIVATE ${_blake3_defs})
# Third-party code: our warning flags are not its business, nor whether its
# files can share one translation unit.
target_compile_options(blake3 PRIVATE -w)
set_target_properties(blake3 PROPERTIES UNITY_BUILD OFF)
