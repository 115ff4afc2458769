# Default CUDA architecture, chosen before project() enables the CUDA language.
#
# Order: the user's CMAKE_CUDA_ARCHITECTURES (or the CUDAARCHS environment variable,
# which CMake reads itself); else the compute capability of the GPU in this machine;
# else one fixed architecture so that machines without a GPU (CI) can still build.
# CMake's own `native` value is a fatal error when no GPU is present, so it is not used.

set(LABKIT_FALLBACK_CUDA_ARCH 75 CACHE STRING
    "CUDA architecture used when the machine has no GPU (75 is the oldest that CUDA 13 supports)")

function(labkit_default_cuda_architectures)
  if(DEFINED CMAKE_CUDA_ARCHITECTURES OR DEFINED ENV{CUDAARCHS})
    return()
  endif()
  set(arch "")
  find_program(LABKIT_NVIDIA_SMI nvidia-smi)
  if(LABKIT_NVIDIA_SMI)
    execute_process(
      COMMAND ${LABKIT_NVIDIA_SMI} --query-gpu=compute_cap --format=csv,noheader
      OUTPUT_VARIABLE caps RESULT_VARIABLE rc ERROR_QUIET TIMEOUT 30)
    if(rc EQUAL 0 AND caps MATCHES "^[ \t]*([0-9]+)\\.([0-9]+)")
      set(arch "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
    endif()
  endif()
  if(arch STREQUAL "")
    set(arch ${LABKIT_FALLBACK_CUDA_ARCH})
    message(STATUS "cuda-labkit: no GPU found; building for sm_${arch} (PTX included, so it also runs on newer GPUs)")
  else()
    message(STATUS "cuda-labkit: building for the GPU in this machine, sm_${arch}")
    if(arch LESS 75)
      message(WARNING "cuda-labkit: this GPU (sm_${arch}) is older than compute capability 7.5, "
                      "which the labs need. Building will likely fail with CUDA 13.")
    endif()
  endif()
  set(CMAKE_CUDA_ARCHITECTURES ${arch} CACHE STRING "CUDA architectures to build for" FORCE)
endfunction()
