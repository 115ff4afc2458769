// Provided by the kit. The timers' fence over the implementation's own streams
// (stream_fence.h): the runtime's stream entry points, defined here, keep the table of the
// implementation's live streams, and wait_for_streams() makes the legacy default stream
// wait for each of them before a timer's stop event.
//
// Host code only (a .cpp): cudaStreamCreateWithFlags and cudaStreamCreateWithPriority are
// also device-runtime functions, which nvcc does not let a .cu file define.
#include "stream_fence.h"

#include <mutex>

#include "next_symbol.h"

namespace lab::streams {
namespace {

using Create = cudaError_t (*)(cudaStream_t*);
using CreateWithFlags = cudaError_t (*)(cudaStream_t*, unsigned int);
using CreateWithPriority = cudaError_t (*)(cudaStream_t*, unsigned int, int);
using Destroy = cudaError_t (*)(cudaStream_t);

Create next_create() {
  static const Create fn = next_symbol<Create>("cudaStreamCreate");
  return fn;
}
CreateWithFlags next_create_with_flags() {
  static const CreateWithFlags fn = next_symbol<CreateWithFlags>("cudaStreamCreateWithFlags");
  return fn;
}
CreateWithPriority next_create_with_priority() {
  static const CreateWithPriority fn = next_symbol<CreateWithPriority>("cudaStreamCreateWithPriority");
  return fn;
}
Destroy next_destroy() {
  static const Destroy fn = next_symbol<Destroy>("cudaStreamDestroy");
  return fn;
}

// One place of the table: a live stream of the implementation, and the event that marks
// how far its work had come when the timer last waited for it.
struct Slot {
  cudaStream_t stream = nullptr;
  bool live = false;      // holds a stream the implementation created and has not destroyed
  bool reserved = false;  // taken by a creation under way (libcudart is called without the lock)
};

struct Table {
  std::mutex mutex;
  Slot slots[kMaxStreams];
  cudaEvent_t events[kMaxStreams] = {};
  bool events_ready = false;
  bool refused = false;  // a creation beyond kMaxStreams since take_refused()
};

// Made at its first use, which may come from an implementation's static constructor, and
// never destroyed: a stream destroyed by a static destructor at exit still finds it.
Table& table() {
  static Table* t = new Table();
  return *t;
}

// The table's events, created once (the lock held); no timing, so recording one is cheap.
cudaError_t make_events(Table& t) {
  if (t.events_ready) return cudaSuccess;
  for (cudaEvent_t& event : t.events) {
    if (event != nullptr) continue;
    const cudaError_t status = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    if (status != cudaSuccess) {
      event = nullptr;
      return status;
    }
  }
  t.events_ready = true;
  return cudaSuccess;
}

// A creation of a stream of the implementation: a place in the table first (or
// cudaErrorNotPermitted when all kMaxStreams are taken), then libcudart's `create`.
template <class Call>
cudaError_t create_tracked(cudaStream_t* stream, Call create) {
  Table& t = table();
  int place = -1;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    const cudaError_t ready = make_events(t);
    if (ready != cudaSuccess) return ready;
    for (int i = 0; i < kMaxStreams && place < 0; ++i) {
      if (!t.slots[i].live && !t.slots[i].reserved) place = i;
    }
    if (place < 0) {
      t.refused = true;
      return cudaErrorNotPermitted;
    }
    t.slots[place].reserved = true;
  }
  const cudaError_t status = create();
  std::lock_guard<std::mutex> lock(t.mutex);
  Slot& slot = t.slots[place];
  slot.reserved = false;
  if (status == cudaSuccess && stream != nullptr && *stream != nullptr) {
    slot.stream = *stream;
    slot.live = true;
  }
  return status;
}

// Before `stream` is destroyed: the legacy stream waits for the work it still holds (a
// destroyed stream's work runs to its end), and its place in the table is free again.
// Streams the table does not hold (0, cudaStreamPerThread, one of libcudart's) pass through.
void forget(cudaStream_t stream) {
  if (stream == nullptr) return;
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (int i = 0; i < kMaxStreams; ++i) {
    Slot& slot = t.slots[i];
    if (!slot.live || slot.stream != stream) continue;
    const bool clean = cudaPeekAtLastError() == cudaSuccess;
    cudaError_t status = cudaEventRecord(t.events[i], stream);
    if (status == cudaSuccess) status = cudaStreamWaitEvent(cudaStreamLegacy, t.events[i], 0);
    // Only what these calls raised is cleared; a lost context shows at the next call anyway.
    if (status != cudaSuccess && clean) (void)cudaGetLastError();
    slot.live = false;
    slot.stream = nullptr;
    return;
  }
}

}  // namespace

cudaError_t prepare_stream_fence() {
  if (next_create() == nullptr || next_create_with_flags() == nullptr || next_create_with_priority() == nullptr ||
      next_destroy() == nullptr) {
    return cudaErrorSharedObjectSymbolNotFound;
  }
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  return make_events(t);
}

cudaError_t wait_for_streams() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (int i = 0; i < kMaxStreams; ++i) {
    if (!t.slots[i].live) continue;
    cudaError_t status = cudaEventRecord(t.events[i], t.slots[i].stream);
    if (status == cudaSuccess) status = cudaStreamWaitEvent(cudaStreamLegacy, t.events[i], 0);
    if (status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

int live_streams() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  int count = 0;
  for (const Slot& slot : t.slots) count += slot.live ? 1 : 0;
  return count;
}

bool take_refused() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  const bool refused = t.refused;
  t.refused = false;
  return refused;
}

}  // namespace lab::streams

// The runtime's stream entry points, defined here so that the implementation's calls come
// here first (stream_fence.h says how they get here in the worker and in a bench). Each is
// passed on to libcudart unchanged; visible, or the worker could not export them (the kit
// builds with hidden visibility).
#define LABKIT_STREAM_ENTRY extern "C" __attribute__((visibility("default"))) cudaError_t CUDARTAPI

LABKIT_STREAM_ENTRY cudaStreamCreate(cudaStream_t* pStream) {
  const auto next = lab::streams::next_create();
  if (next == nullptr) return cudaErrorNotSupported;
  return lab::streams::create_tracked(pStream, [&] { return next(pStream); });
}

LABKIT_STREAM_ENTRY cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  const auto next = lab::streams::next_create_with_flags();
  if (next == nullptr) return cudaErrorNotSupported;
  return lab::streams::create_tracked(pStream, [&] { return next(pStream, flags); });
}

LABKIT_STREAM_ENTRY cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags, int priority) {
  const auto next = lab::streams::next_create_with_priority();
  if (next == nullptr) return cudaErrorNotSupported;
  return lab::streams::create_tracked(pStream, [&] { return next(pStream, flags, priority); });
}

LABKIT_STREAM_ENTRY cudaStreamDestroy(cudaStream_t stream) {
  const auto next = lab::streams::next_destroy();
  if (next == nullptr) return cudaErrorNotSupported;
  lab::streams::forget(stream);
  return next(stream);
}
