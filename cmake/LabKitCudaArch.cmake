# Default CUDA architectures, chosen before project() enables the CUDA language.
#
# Order:
# 1. the user's CMAKE_CUDA_ARCHITECTURES (-D, a preset, or the cache of an earlier
#    configure of this build folder) or the CUDAARCHS environment variable, which CMake
#    reads itself;
# 2. else every distinct compute capability of the GPUs in this machine (nvidia-smi):
#    a machine with an A10 and an H100 builds "86;90", machine code and PTX for each;
# 3. else (no GPU, as on CI) LABKIT_FALLBACK_CUDA_ARCHITECTURES.
# The choice is stored in the cache, so a build folder keeps it until it is given another
# (`cmake -B <build> -DCMAKE_CUDA_ARCHITECTURES=90`; the grader's --cuda-arch does that).
# CMake's own `native` value is a fatal error when no GPU is present, so it is not used.
#
# A plain number builds machine code (SASS) for that GPU and PTX, which the driver compiles
# at first use for any newer GPU; `NN-real` builds the machine code alone. Machine code
# runs on GPUs of its own major version and a minor version at least its own (sm_80 runs
# on an sm_86 GPU, not the reverse). The grader refuses, before building, a GPU that the
# build has no code for (grader/arch.py).

set(LABKIT_FALLBACK_CUDA_ARCHITECTURES 75 CACHE STRING
    "CUDA architectures (a ;-list as CMAKE_CUDA_ARCHITECTURES takes it) built on a machine without a GPU. \
The default, 75, is sm_75 machine code (T4) and compute_75 PTX, which the driver compiles for any newer GPU \
at first use; add machine code for your GPUs with e.g. \"75;80;90\"")

# The oldest compute capability the labs support (and CUDA 13 builds for).
set(LABKIT_MIN_CUDA_ARCH 75)

function(labkit_default_cuda_architectures)
  if(DEFINED CMAKE_CUDA_ARCHITECTURES)
    message(STATUS "cuda-labkit: building for CMAKE_CUDA_ARCHITECTURES=${CMAKE_CUDA_ARCHITECTURES}")
    return()
  endif()
  if(DEFINED ENV{CUDAARCHS})
    message(STATUS "cuda-labkit: building for CUDAARCHS=$ENV{CUDAARCHS}")
    return()
  endif()
  set(archs "")
  set(too_old "")
  find_program(LABKIT_NVIDIA_SMI nvidia-smi)
  if(LABKIT_NVIDIA_SMI)
    execute_process(
      COMMAND ${LABKIT_NVIDIA_SMI} --query-gpu=compute_cap --format=csv,noheader
      OUTPUT_VARIABLE caps RESULT_VARIABLE rc ERROR_QUIET TIMEOUT 30)
    if(rc EQUAL 0)
      # One line per GPU, "8.6"; each distinct capability once.
      string(REGEX MATCHALL "[0-9]+\\.[0-9]+" caps "${caps}")
      foreach(cap IN LISTS caps)
        string(REPLACE "." "" arch "${cap}")
        if(arch LESS LABKIT_MIN_CUDA_ARCH)
          list(APPEND too_old "sm_${arch}")
        else()
          list(APPEND archs "${arch}")
        endif()
      endforeach()
    endif()
  endif()
  if(too_old)
    list(REMOVE_DUPLICATES too_old)
    list(JOIN too_old ", " named)
    message(WARNING "cuda-labkit: this machine's GPU (${named}) is older than compute capability 7.5, which "
                    "the labs need: it is left out of the build, and the grader will not grade on it.")
  endif()
  if(archs)
    list(REMOVE_DUPLICATES archs)
    list(SORT archs COMPARE NATURAL)
    message(STATUS "cuda-labkit: building for the GPUs in this machine, CMAKE_CUDA_ARCHITECTURES=${archs}")
  else()
    set(archs ${LABKIT_FALLBACK_CUDA_ARCHITECTURES})
    message(STATUS "cuda-labkit: no GPU of compute capability 7.5 or newer found; building for LABKIT_FALLBACK_CUDA_ARCHITECTURES=${archs} "
                   "(a plain number includes PTX, which newer GPUs compile at first use). For other GPUs: "
                   "-DCMAKE_CUDA_ARCHITECTURES=\"80;90\"")
  endif()
  set(CMAKE_CUDA_ARCHITECTURES "${archs}" CACHE STRING "CUDA architectures to build for" FORCE)
endfunction()
