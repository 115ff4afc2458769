// Provided by the kit. The timers' fence over the implementation's own streams
// (common/src/stream_fence.cpp), on the CPU: linked with a fake libcudart (fake_cudart.cpp)
// whose journal shows every call the fence makes and passes on. The worker and the benches
// run the same file against the real libcudart; what reaches the GPU (a stop event that
// really waits) is checked by the corpus cases stream_nonblocking and stream_returns_early.
//
// The table lives for the whole program, as in the worker: each test ends with no stream
// of its own alive. EventsFail.* runs alone (its own CTest entry): it needs a program
// whose table has no events yet.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "fake_cudart.h"
#include "stream_fence.h"

namespace {

using Lines = std::vector<std::string>;

// The journal since the last call, emptied.
Lines take_journal() {
  Lines lines;
  lines.swap(fake_cudart::journal());
  return lines;
}

std::string name_of(cudaStream_t stream) {
  return "s" + std::to_string(reinterpret_cast<std::uintptr_t>(stream) >> 12);
}

// The event the table uses for `stream`: the one the fence records on it.
std::string event_of(cudaStream_t stream) {
  take_journal();
  EXPECT_EQ(lab::streams::wait_for_streams(), cudaSuccess);
  const std::string suffix = " on " + name_of(stream);
  for (const std::string& line : take_journal()) {
    if (line.size() > suffix.size() && line.compare(line.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return line.substr(7, line.size() - 7 - suffix.size());  // "record e12 on s3" -> "e12"
    }
  }
  return "";
}

class StreamFence : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_cudart::knobs() = {};
    fake_cudart::set_last_error(cudaSuccess);
    ASSERT_EQ(lab::streams::prepare_stream_fence(), cudaSuccess);
    ASSERT_EQ(lab::streams::live_streams(), 0) << "a test left a stream alive";
    (void)lab::streams::take_refused();
    take_journal();
  }
};

TEST(EventsFail, AStreamIsNotCreatedWhenTheFenceHasNoEvents) {
  fake_cudart::knobs().event_create_fails = true;
  cudaStream_t stream = nullptr;
  EXPECT_EQ(cudaStreamCreate(&stream), cudaErrorNoDevice) << "the events' error, passed on";
  EXPECT_EQ(stream, nullptr);
  EXPECT_EQ(lab::streams::live_streams(), 0);
  EXPECT_EQ(take_journal(), Lines{}) << "libcudart's cudaStreamCreate was not called";
  EXPECT_EQ(lab::streams::prepare_stream_fence(), cudaErrorNoDevice);
  // Once events can be made, streams can be too.
  fake_cudart::knobs().event_create_fails = false;
  EXPECT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  const Lines lines = take_journal();
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("event ", 0) == 0; }),
            lab::streams::kMaxStreams);
  EXPECT_EQ(lines.back(), "create " + name_of(stream));
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST_F(StreamFence, EventsAreMadeOnceBeforeTheFirstStream) {
  EXPECT_EQ(lab::streams::prepare_stream_fence(), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  EXPECT_EQ(take_journal(), Lines{"create " + name_of(stream)}) << "no new events";
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST_F(StreamFence, WaitsForEveryLiveStreamOfEveryEntryPoint) {
  cudaStream_t plain = nullptr, blocking = nullptr, non_blocking = nullptr, priority = nullptr;
  ASSERT_EQ(cudaStreamCreate(&plain), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&blocking, cudaStreamDefault), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithPriority(&priority, cudaStreamNonBlocking, -2), cudaSuccess);
  EXPECT_EQ(take_journal(), (Lines{"create " + name_of(plain), "create blocking " + name_of(blocking),
                                   "create non-blocking " + name_of(non_blocking),
                                   "create priority -2 " + name_of(priority)}))
      << "each creation passed on unchanged";
  EXPECT_EQ(lab::streams::live_streams(), 4);

  ASSERT_EQ(lab::streams::wait_for_streams(), cudaSuccess);
  const Lines lines = take_journal();
  ASSERT_EQ(lines.size(), 8u);
  std::vector<std::string> events;
  for (std::size_t i = 0; i < lines.size(); i += 2) {
    // An event on the stream, then the legacy default stream (the timers') waits for it.
    const std::string event = lines[i].substr(7, lines[i].find(" on ") - 7);
    EXPECT_EQ(lines[i + 1], "legacy waits for " + event) << lines[i];
    events.push_back(event);
  }
  EXPECT_EQ(lines[0], "record " + events[0] + " on " + name_of(plain));
  EXPECT_EQ(lines[2], "record " + events[1] + " on " + name_of(blocking));
  EXPECT_EQ(lines[4], "record " + events[2] + " on " + name_of(non_blocking));
  EXPECT_EQ(lines[6], "record " + events[3] + " on " + name_of(priority));
  std::sort(events.begin(), events.end());
  EXPECT_EQ(std::unique(events.begin(), events.end()), events.end()) << "one event per stream";
  EXPECT_EQ(fake_cudart::journal(), Lines{});

  for (cudaStream_t s : {plain, blocking, non_blocking, priority}) ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(lab::streams::live_streams(), 0);
  ASSERT_EQ(lab::streams::wait_for_streams(), cudaSuccess);
  take_journal();
  ASSERT_EQ(lab::streams::wait_for_streams(), cudaSuccess);
  EXPECT_EQ(take_journal(), Lines{}) << "no streams: the fence does nothing";
}

TEST_F(StreamFence, ADestroyedStreamIsWaitedForAtItsDestruction) {
  cudaStream_t kept = nullptr, dropped = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&kept, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&dropped, cudaStreamNonBlocking), cudaSuccess);
  const std::string event = event_of(dropped);
  ASSERT_FALSE(event.empty());
  ASSERT_EQ(cudaStreamDestroy(dropped), cudaSuccess);
  // Its work still runs after cudaStreamDestroy: the legacy stream waits for it first.
  EXPECT_EQ(take_journal(), (Lines{"record " + event + " on " + name_of(dropped), "legacy waits for " + event,
                                   "destroy " + name_of(dropped)}));
  EXPECT_EQ(lab::streams::live_streams(), 1);
  ASSERT_EQ(lab::streams::wait_for_streams(), cudaSuccess);
  const Lines lines = take_journal();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find(" on " + name_of(kept)), std::string::npos) << "only the stream still alive";
  ASSERT_EQ(cudaStreamDestroy(kept), cudaSuccess);
}

TEST_F(StreamFence, StreamsItDidNotCreatePassThrough) {
  cudaStream_t foreign = reinterpret_cast<cudaStream_t>(std::uintptr_t{999} << 12);
  for (cudaStream_t stream : {static_cast<cudaStream_t>(nullptr), cudaStreamPerThread, foreign}) {
    EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  }
  EXPECT_EQ(take_journal(), (Lines{"destroy 0", "destroy per-thread", "destroy s999"}));
}

TEST_F(StreamFence, AFailedCreationTakesNoPlace) {
  fake_cudart::knobs().create_fails = true;
  cudaStream_t stream = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaStreamCreate(nullptr), cudaErrorMemoryAllocation);
  fake_cudart::knobs().create_fails = false;
  EXPECT_EQ(cudaStreamCreate(nullptr), cudaErrorInvalidValue) << "libcudart's answer to a null pointer";
  EXPECT_EQ(lab::streams::live_streams(), 0);
  EXPECT_FALSE(lab::streams::take_refused());
}

TEST_F(StreamFence, AtMostKMaxStreamsThenCreationIsRefused) {
  std::vector<cudaStream_t> streams(lab::streams::kMaxStreams);
  for (cudaStream_t& s : streams) ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_EQ(lab::streams::live_streams(), lab::streams::kMaxStreams);
  EXPECT_FALSE(lab::streams::take_refused());
  take_journal();

  cudaStream_t one_more = nullptr;
  EXPECT_EQ(cudaStreamCreate(&one_more), cudaErrorNotPermitted);
  EXPECT_EQ(cudaStreamCreateWithPriority(&one_more, 0, 0), cudaErrorNotPermitted);
  EXPECT_EQ(one_more, nullptr);
  EXPECT_EQ(take_journal(), Lines{}) << "refused before libcudart made a stream the timer could not follow";
  EXPECT_TRUE(lab::streams::take_refused());
  EXPECT_FALSE(lab::streams::take_refused()) << "taken once";

  // Every one is still waited for, and a destroyed one frees its place.
  ASSERT_EQ(lab::streams::wait_for_streams(), cudaSuccess);
  EXPECT_EQ(take_journal().size(), 2u * lab::streams::kMaxStreams);
  ASSERT_EQ(cudaStreamDestroy(streams[10]), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&streams[10]), cudaSuccess);
  EXPECT_FALSE(lab::streams::take_refused());
  EXPECT_EQ(lab::streams::live_streams(), lab::streams::kMaxStreams);
  for (cudaStream_t s : streams) ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST_F(StreamFence, AFenceThatFailsSaysSo) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  fake_cudart::knobs().record_fails = true;
  EXPECT_EQ(lab::streams::wait_for_streams(), cudaErrorInvalidResourceHandle);
  fake_cudart::set_last_error(cudaSuccess);

  // At a destruction the failure is cleared when nothing was pending before it ...
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  EXPECT_EQ(lab::streams::live_streams(), 0) << "its place is free all the same";
  // ... and an error the implementation left pending is left for it to find.
  fake_cudart::knobs().record_fails = false;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  fake_cudart::knobs().record_fails = true;
  fake_cudart::set_last_error(cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_NE(cudaPeekAtLastError(), cudaSuccess);
  fake_cudart::set_last_error(cudaSuccess);
}

TEST_F(StreamFence, TheFenceLeavesThePendingErrorAlone) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  fake_cudart::set_last_error(cudaErrorInvalidConfiguration);  // an unchecked launch of the implementation
  EXPECT_EQ(lab::streams::wait_for_streams(), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration) << "still there for the worker to report";
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

}  // namespace
