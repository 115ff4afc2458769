// Provided by the kit. The lead before a timed call: every SM of the GPU is kept busy for
// a moment, and the call's start event is recorded behind it.
//
// Why. A call is timed from its start event to its stop event. Recorded on an idle GPU,
// the start event fires at once, and the GPU then waits for the host to launch the
// call's first kernel: a few microseconds of host work, more in a process whose host
// path is slower, which is not what the lab measures. With the lead, the host records
// the start event and enqueues the call while the lead runs, and the start event fires
// when the GPU is ready to run the call. A direct bench and a judge's worker process
// (common/worker/worker_main.cu) both do this, so they time the same span; the lead also
// absorbs the switch from the judge's GPU context to the worker's.
//
// The lead occupies every thread slot of every SM, so no kernel of the call, on any
// stream, can start before the start event: the lead gives the call no head start.
// A call whose host work before its first launch takes longer than the lead shows that
// excess in its time, as it would without the lead.
#pragma once

#include <cuda_runtime.h>

namespace lab {

/// How long the lead keeps the GPU busy (ns): longer than the host needs to record the
/// start event and launch a call's first kernels.
constexpr unsigned long long kTimingLeadNs = 20000;

/// Each thread waits `nanoseconds` by the GPU's clock: the lead, and the judge's hold
/// (common/judge/session.cu). Internal linkage: every program that includes this header
/// gets its own copy.
static __global__ void busy_wait_kernel(unsigned long long nanoseconds) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < nanoseconds);
}

/// Launches the lead on the default stream (the stream a timed call's events use).
/// Returns the launch's status; a lead that cannot be launched only costs the fairness
/// described above, so callers may ignore a failure (the call itself will report one).
inline cudaError_t launch_timing_lead() {
  int device = 0, sms = 0, threads_per_sm = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status == cudaSuccess) status = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (status == cudaSuccess) {
    status = cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device);
  }
  if (status != cudaSuccess) return status;
  constexpr int kThreads = 256;  // divides every GPU's thread slots per SM
  const int blocks = sms * (threads_per_sm / kThreads);
  busy_wait_kernel<<<blocks, kThreads>>>(kTimingLeadNs);
  return cudaGetLastError();
}

}  // namespace lab
