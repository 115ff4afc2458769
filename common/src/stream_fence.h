// Provided by the kit. The timers' fence over the implementation's own streams.
//
// A call is timed by two CUDA events on the legacy default stream (the worker's stamps,
// common/worker/worker_main.cu; a direct bench's own, common/src/bench_sampling.cu). Work
// on a stream the implementation created does not always end before the stop event: a
// non-blocking stream (cudaStreamNonBlocking, or any priority stream made so) runs beside
// the legacy stream. So every program that times an implementation defines the runtime's
// stream entry points itself (stream_fence.cpp): cudaStreamCreate, cudaStreamCreateWithFlags,
// cudaStreamCreateWithPriority and cudaStreamDestroy pass each call on to libcudart
// (RTLD_NEXT) and keep the streams that are alive in a table of kMaxStreams, and
// wait_for_streams(), called right before the stop event is recorded, makes the legacy
// stream wait for everything enqueued on each of them (an event recorded on the stream,
// cudaStreamWaitEvent on the legacy stream). A stream destroyed while its work is still
// running is waited for at its cudaStreamDestroy (the legacy stream waits for what it
// holds then), so destroying a stream hides nothing either.
//
// The worker exports these entry points (worker_exports.list), so the implementation
// library's calls bind to them; a direct bench links the implementation's object with the
// bench library, whose definitions the linker prefers to libcudart's. The table's events
// are created once: in the worker before its sandbox closes (prepare_stream_fence), in a
// bench at the first stream the implementation creates.
#pragma once

#include <cuda_runtime.h>

namespace lab::streams {

/// The most streams of the implementation the timers follow at once (alive: created and not
/// yet destroyed). Creating one more fails with cudaErrorNotPermitted and the call that did
/// it fails with kTooManyStreams.
constexpr int kMaxStreams = 64;

/// What a call that tried to create a stream beyond kMaxStreams reports.
constexpr const char* kTooManyStreams =
    "your code tried to have more than 64 streams of its own at once, the most the timer can wait for: create "
    "the streams you need once and reuse them, or destroy each with cudaStreamDestroy when you are done with it";

/// Creates the table's events (once) and finds libcudart's stream entry points: cudaSuccess,
/// or the error that stops the timers from following streams.
cudaError_t prepare_stream_fence();

/// Makes the legacy default stream wait for all work enqueued so far on every live stream of
/// the implementation; call it right before recording a timer's stop event. Returns the
/// first error of the runtime (the CUDA context is lost, say), having left the runtime's
/// last-error record as it found it when nothing failed.
cudaError_t wait_for_streams();

/// How many streams of the implementation are alive now.
int live_streams();

/// Whether a stream creation was refused (kMaxStreams) since the last call; clears it.
bool take_refused();

}  // namespace lab::streams
