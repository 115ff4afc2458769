// Reference solution of the compact lab (instructors only): the single_pass_vec variant
// (compact_vec.cu), declared here so that compact.cu can make it the default.
#pragma once

namespace compact_solution {

/// compact() by one pass with int4 loads and a shared-memory stage; see compact_vec.cu.
int compact_single_pass_vec(const int* in, int* out, int n);

}  // namespace compact_solution
