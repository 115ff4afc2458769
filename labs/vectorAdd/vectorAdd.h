// Provided by the kit: do not edit. The interface of the vectorAdd lab.
//
// vector_add is what the tests and the grader call. It takes device pointers, so the
// timed work is the GPU's and not the copies over PCIe (the bench times those too,
// separately). Handout: handouts/vectorAdd.md.
#pragma once

/// c[i] = a[i] + b[i] for 0 <= i < n, on the default stream. a, b and c are device
/// pointers to n floats each (any float alignment); c does not overlap a or b.
/// n = 0 does nothing. The result is exact: one IEEE addition per element.
void vector_add(const float* a, const float* b, float* c, int n);

/// The sequential version on the CPU (host pointers): the golden result and the CPU baseline.
void vector_add_cpu(const float* a, const float* b, float* c, int n);
