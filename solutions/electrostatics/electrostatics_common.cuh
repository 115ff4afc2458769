// Reference solution of the electrostatics lab: device helpers shared by the direct
// (electrostatics.cu) and the cutoff (cutoff.cu) kernels.
#pragma once

#include "electrostatics.h"

/// The hardware's approximate reciprocal square root (MUFU.RSQ), relative error < 2^-22,
/// subnormal inputs and results flushed to zero. rsqrtf() compiles to the same instruction
/// plus a few others that handle subnormals unless the build uses -ftz=true; distances
/// here are never subnormal, so those instructions would only cost issue slots.
__device__ __forceinline__ float fast_rsqrt(float x) {
  float r;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
