// Provided by the kit. The error-checking names of the CUDA samples' helper_cuda.h,
// which the toolkit no longer ships, so that lecture code compiles as written.
// Unlike the samples' version these throw lab::CudaError instead of exiting, so a
// failure becomes a test failure with a message.
#pragma once

#include <cstdio>

#include "lab/cuda_check.h"

/// Throws lab::CudaError when `call` fails (the samples' checkCudaErrors).
#define checkCudaErrors(call) LAB_CUDA_CHECK(call)

/// Throws lab::CudaError when the last launch failed; `msg` names what was launched.
#define getLastCudaError(msg) ::lab::check_launch((msg), __FILE__, __LINE__)
