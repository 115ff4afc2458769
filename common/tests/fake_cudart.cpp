// Provided by the kit. A fake of the few CUDA runtime calls that the timers' fence
// (common/src/stream_fence.cpp) makes and passes on, for stream_fence_test: no GPU, a journal
// of every call, and knobs that make a call fail. stream_fence_test links this library in
// place of libcudart, so the fence's RTLD_NEXT look-ups and its own calls both land here.
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "fake_cudart.h"

namespace {

struct Fake {
  std::vector<std::string> journal;
  cudaError_t last_error = cudaSuccess;
  int next_id = 1;
  fake_cudart::Knobs knobs;
};

Fake& fake() {
  static Fake f;
  return f;
}

// Handles are small numbers, never dereferenced: stream 5 is (cudaStream_t)0x5000.
template <class Handle>
Handle handle(int id) {
  return reinterpret_cast<Handle>(static_cast<std::uintptr_t>(id) << 12);
}
template <class Handle>
int id_of(Handle h) {
  return static_cast<int>(reinterpret_cast<std::uintptr_t>(h) >> 12);
}

std::string stream_name(cudaStream_t stream) {
  if (stream == cudaStreamLegacy) return "legacy";
  if (stream == cudaStreamPerThread) return "per-thread";
  if (stream == nullptr) return "0";
  return "s" + std::to_string(id_of(stream));
}

cudaError_t fail(cudaError_t error) {
  fake().last_error = error;
  return error;
}

cudaError_t create(const char* what, cudaStream_t* stream) {
  Fake& f = fake();
  if (f.knobs.create_fails) {
    f.journal.push_back(std::string(what) + " fails");
    return fail(cudaErrorMemoryAllocation);
  }
  if (stream == nullptr) return fail(cudaErrorInvalidValue);
  *stream = handle<cudaStream_t>(f.next_id++);
  f.journal.push_back(std::string(what) + " " + stream_name(*stream));
  return cudaSuccess;
}

}  // namespace

namespace fake_cudart {

std::vector<std::string>& journal() { return fake().journal; }
Knobs& knobs() { return fake().knobs; }
void set_last_error(cudaError_t error) { fake().last_error = error; }

}  // namespace fake_cudart

// Exported (the kit builds with hidden visibility), as libcudart's are.
#define FAKE_API __attribute__((visibility("default"))) cudaError_t CUDARTAPI

extern "C" {

FAKE_API cudaStreamCreate(cudaStream_t* stream) { return create("create", stream); }

FAKE_API cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  return create(flags == cudaStreamNonBlocking ? "create non-blocking" : "create blocking", stream);
}

FAKE_API cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int, int priority) {
  return create(("create priority " + std::to_string(priority)).c_str(), stream);
}

FAKE_API cudaStreamDestroy(cudaStream_t stream) {
  fake().journal.push_back("destroy " + stream_name(stream));
  return cudaSuccess;
}

FAKE_API cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  Fake& f = fake();
  if (f.knobs.event_create_fails) return fail(cudaErrorNoDevice);
  if (flags != cudaEventDisableTiming) return fail(cudaErrorInvalidValue);  // the fence needs no timing
  *event = handle<cudaEvent_t>(f.next_id++);
  f.journal.push_back("event e" + std::to_string(id_of(*event)));
  return cudaSuccess;
}

FAKE_API cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  Fake& f = fake();
  if (f.knobs.record_fails) return fail(cudaErrorInvalidResourceHandle);
  f.journal.push_back("record e" + std::to_string(id_of(event)) + " on " + stream_name(stream));
  return cudaSuccess;
}

FAKE_API cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  Fake& f = fake();
  if (flags != 0) return fail(cudaErrorInvalidValue);
  f.journal.push_back(stream_name(stream) + " waits for e" + std::to_string(id_of(event)));
  return cudaSuccess;
}

FAKE_API cudaPeekAtLastError() { return fake().last_error; }

FAKE_API cudaGetLastError() {
  const cudaError_t error = fake().last_error;
  fake().last_error = cudaSuccess;
  return error;
}

}  // extern "C"
