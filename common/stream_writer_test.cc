// StreamWriter (common/stream_writer.h) behind a real in-process gRPC server on 127.0.0.1:0. The
// test implements one server-streaming method, coordinator.v1.WorkService.WatchRun, with a
// writer it drives by hand; RunEvent carries who pushed a message (run_id) and its sequence
// number (item.version). Messages pushed before the handler returns its reactor wait in gRPC's
// backlog: the first is "in flight" until the call starts, which makes queue states exact
// without sleeping.
#include "common/stream_writer.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "coordinator/v1/work.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace common {
namespace {

namespace v1 = ::coordinator::v1;
using PushResult = StreamWriter<v1::RunEvent>::PushResult;

v1::RunEvent Event(const std::string& producer, int64_t seq) {
  v1::RunEvent event;
  event.set_run_id(producer);
  event.mutable_item()->set_version(seq);
  return event;
}

// A writer that reports its cancel and its end.
class TestStream final : public StreamWriter<v1::RunEvent> {
 public:
  TestStream(size_t max_queue, grpc::Status overflow)
      : StreamWriter(max_queue, std::move(overflow)) {}

  absl::Notification cancelled;
  absl::Notification done;

 private:
  void OnCancelled() override { cancelled.Notify(); }
  void OnStreamDone() override { done.Notify(); }
};

// WatchRun hands each call a fresh TestStream; `before_return` runs on it before gRPC gets it.
class TestService final : public v1::WorkService::CallbackService {
 public:
  size_t max_queue = 0;
  std::function<void(TestStream&)> before_return;
  bool refuse = false;

  grpc::ServerWriteReactor<v1::RunEvent>* WatchRun(
      grpc::CallbackServerContext* /*context*/, const v1::WatchRunRequest* /*request*/) override {
    if (refuse) {
      return RefuseStream<v1::RunEvent>(
          grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "not this one"));
    }
    std::shared_ptr<TestStream> stream = MakeStream<TestStream>(
        max_queue, grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "fell behind"));
    if (before_return) before_return(*stream);
    absl::MutexLock lock(&mu_);
    stream_ = stream;
    return stream.get();
  }

  // The stream of the call in progress, once its handler has run.
  std::shared_ptr<TestStream> WaitForStream() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](std::shared_ptr<TestStream>* s) { return *s != nullptr; }, &stream_));
    return stream_;
  }

 private:
  absl::Mutex mu_;
  std::shared_ptr<TestStream> stream_ ABSL_GUARDED_BY(mu_);
};

class StreamWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::WorkService::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override { server_->Shutdown(std::chrono::system_clock::now()); }

  // Starts a call; the context must outlive the reader.
  std::unique_ptr<grpc::ClientReader<v1::RunEvent>> Watch(grpc::ClientContext* context) {
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return stub_->WatchRun(context, v1::WatchRunRequest());
  }

  // Reads to the end of the stream; returns the messages and sets `*status`.
  static std::vector<v1::RunEvent> ReadAll(grpc::ClientReader<v1::RunEvent>* reader,
                                           grpc::Status* status) {
    std::vector<v1::RunEvent> events;
    v1::RunEvent event;
    while (reader->Read(&event)) events.push_back(event);
    *status = reader->Finish();
    return events;
  }

  // One whole call: every message, and its status in `*status`.
  std::vector<v1::RunEvent> Call(grpc::Status* status) {
    grpc::ClientContext context;
    return ReadAll(Watch(&context).get(), status);
  }

  TestService service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::WorkService::Stub> stub_;
};

TEST_F(StreamWriterTest, PushesFromSeveralThreadsArriveInEachThreadsOrder) {
  grpc::ClientContext context;
  auto reader = Watch(&context);
  std::shared_ptr<TestStream> stream = service_.WaitForStream();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 500;
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&stream, t] {
      for (int i = 0; i < kPerThread; ++i) {
        EXPECT_EQ(stream->Push(Event(absl::StrCat("p", t), i)), PushResult::kQueued);
      }
    });
  }
  for (std::thread& producer : producers) producer.join();
  stream->Close(grpc::Status::OK);

  grpc::Status status;
  std::vector<v1::RunEvent> events = ReadAll(reader.get(), &status);
  EXPECT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(events.size(), static_cast<size_t>(kThreads * kPerThread));
  absl::flat_hash_map<std::string, int64_t> next;
  for (const v1::RunEvent& event : events) {
    EXPECT_EQ(event.item().version(), next[event.run_id()]++) << event.run_id();
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(next[absl::StrCat("p", t)], kPerThread);
  stream->done.WaitForNotification();
  EXPECT_FALSE(stream->cancelled.HasBeenNotified());
}

TEST_F(StreamWriterTest, CloseWritesEveryQueuedMessageThenTheStatus) {
  service_.before_return = [](TestStream& stream) {
    for (int i = 0; i < 100; ++i) ASSERT_EQ(stream.Push(Event("p", i)), PushResult::kQueued);
    stream.Close(grpc::Status(grpc::StatusCode::ABORTED, "enough"));
    EXPECT_EQ(stream.Push(Event("p", 100)), PushResult::kClosed);
    EXPECT_TRUE(stream.closed());
  };
  grpc::Status status;
  std::vector<v1::RunEvent> events = Call(&status);
  ASSERT_EQ(events.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(events[i].item().version(), i);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_EQ(status.error_message(), "enough");
}

TEST_F(StreamWriterTest, ASecondCloseChangesNothing) {
  service_.before_return = [](TestStream& stream) {
    ASSERT_EQ(stream.Push(Event("p", 0)), PushResult::kQueued);
    ASSERT_EQ(stream.Push(Event("p", 1)), PushResult::kQueued);
    stream.Close(grpc::Status(grpc::StatusCode::ABORTED, "first"));
    stream.Close(grpc::Status::OK);
  };
  grpc::Status status;
  EXPECT_EQ(Call(&status).size(), 2u);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_EQ(status.error_message(), "first");
  service_.WaitForStream()->done.WaitForNotification();
}

TEST_F(StreamWriterTest, AbortDropsTheQueueAndTheFirstAbortWins) {
  service_.before_return = [](TestStream& stream) {
    // The first message is in flight (gRPC holds it until the call starts); two more wait.
    for (int i = 0; i < 3; ++i) ASSERT_EQ(stream.Push(Event("p", i)), PushResult::kQueued);
    stream.Close(grpc::Status::OK);
    stream.Abort(grpc::Status(grpc::StatusCode::UNAVAILABLE, "first"));
    stream.Abort(grpc::Status(grpc::StatusCode::INTERNAL, "second"));
    stream.Close(grpc::Status::OK);
  };
  grpc::Status status;
  std::vector<v1::RunEvent> events = Call(&status);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].item().version(), 0);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(status.error_message(), "first");
}

TEST_F(StreamWriterTest, APushBeyondTheBoundEndsTheStreamWithTheOverflowStatus) {
  service_.max_queue = 2;
  service_.before_return = [](TestStream& stream) {
    ASSERT_EQ(stream.Push(Event("p", 0)), PushResult::kQueued);  // in flight: not counted
    ASSERT_EQ(stream.Push(Event("p", 1)), PushResult::kQueued);
    ASSERT_EQ(stream.Push(Event("p", 2)), PushResult::kQueued);
    EXPECT_EQ(stream.Push(Event("p", 3)), PushResult::kOverflowed);
    EXPECT_EQ(stream.Push(Event("p", 4)), PushResult::kClosed);
    EXPECT_EQ(stream.PushUncounted(Event("p", 5)), PushResult::kClosed);
    stream.Close(grpc::Status::OK);  // the overflow status stays
  };
  grpc::Status status;
  std::vector<v1::RunEvent> events = Call(&status);
  // The message in flight is written; the queued ones are dropped.
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].item().version(), 0);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(status.error_message(), "fell behind");
}

TEST_F(StreamWriterTest, UncountedMessagesAndAFullQueueStayWithinTheBound) {
  service_.max_queue = 2;
  service_.before_return = [](TestStream& stream) {
    for (int i = 0; i < 5; ++i)
      ASSERT_EQ(stream.PushUncounted(Event("snapshot", i)), PushResult::kQueued);
    ASSERT_EQ(stream.Push(Event("p", 0)), PushResult::kQueued);
    ASSERT_EQ(stream.Push(Event("p", 1)), PushResult::kQueued);  // the queue is full, not beyond
    stream.Close(grpc::Status::OK);
  };
  grpc::Status status;
  std::vector<v1::RunEvent> events = Call(&status);
  EXPECT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(events.size(), 7u);
  EXPECT_EQ(events[4].run_id(), "snapshot");
  EXPECT_EQ(events[6].run_id(), "p");
  EXPECT_EQ(events[6].item().version(), 1);
}

TEST_F(StreamWriterTest, AClientCancelMidStreamEndsItAndLaterPushesAreDropped) {
  grpc::ClientContext context;
  auto reader = Watch(&context);
  std::shared_ptr<TestStream> stream = service_.WaitForStream();
  // A producer that keeps pushing while the client reads a few messages and cancels; it stops
  // when the writer refuses (or after a cap, should the cancel arrive late).
  std::thread producer([&stream] {
    for (int i = 0; i < 200000; ++i) {
      if (stream->Push(Event("p", i)) == PushResult::kClosed) return;
    }
  });
  v1::RunEvent event;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(reader->Read(&event));
    EXPECT_EQ(event.item().version(), i);
  }
  context.TryCancel();
  stream->cancelled.WaitForNotification();
  stream->done.WaitForNotification();
  producer.join();
  EXPECT_TRUE(stream->closed());
  EXPECT_EQ(stream->Push(Event("p", -1)), PushResult::kClosed);
  stream->Close(grpc::Status::OK);  // after OnDone: nothing reaches gRPC
  stream->Abort(grpc::Status(grpc::StatusCode::INTERNAL, "late"));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(StreamWriterTest, ACancelWhileHeldFinishesOnlyOnRelease) {
  service_.before_return = [](TestStream& stream) { stream.HoldFinish(); };
  grpc::ClientContext context;
  auto reader = Watch(&context);
  std::shared_ptr<TestStream> stream = service_.WaitForStream();
  context.TryCancel();
  stream->cancelled.WaitForNotification();
  EXPECT_TRUE(stream->closed());
  // Held: no Finish yet, so gRPC cannot be done with the call.
  EXPECT_FALSE(stream->done.HasBeenNotified());
  EXPECT_FALSE(stream->ReleaseFinish());
  stream->done.WaitForNotification();
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(StreamWriterTest, AHeldStreamFinishesAfterTheReleaseWithTheClosingStatus) {
  service_.before_return = [](TestStream& stream) {
    stream.HoldFinish();
    ASSERT_EQ(stream.Push(Event("p", 0)), PushResult::kQueued);
    stream.Close(grpc::Status(grpc::StatusCode::NOT_FOUND, "gone"));
  };
  grpc::ClientContext context;
  auto reader = Watch(&context);
  std::shared_ptr<TestStream> stream = service_.WaitForStream();
  v1::RunEvent event;
  ASSERT_TRUE(reader->Read(&event));  // writes go on while held
  EXPECT_FALSE(stream->ReleaseFinish());
  EXPECT_FALSE(reader->Read(&event));
  grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(status.error_message(), "gone");
}

// A burst closed with OK goes out hinted and ends with the last message and the status in one
// batch (no OnWriteDone for it): every message still arrives, in order, then OK, and the
// stream's end is reported once.
TEST_F(StreamWriterTest, ABurstClosedWithOkArrivesWholeThenOk) {
  service_.before_return = [](TestStream& stream) {
    for (int i = 0; i < 4; ++i) ASSERT_EQ(stream.Push(Event("p", i)), PushResult::kQueued);
    stream.Close(grpc::Status::OK);
  };
  grpc::Status status;
  std::vector<v1::RunEvent> events = Call(&status);
  EXPECT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(events.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(events[i].item().version(), i);
  service_.WaitForStream()->done.WaitForNotification();
}

// The same once the call runs: the first message is written alone, the rest of a burst pushed
// while it is in flight follows hinted, and a Close(OK) after the queue drained still finishes.
TEST_F(StreamWriterTest, BurstsOnARunningStreamArriveInOrder) {
  grpc::ClientContext context;
  auto reader = Watch(&context);
  std::shared_ptr<TestStream> stream = service_.WaitForStream();
  for (int burst = 0; burst < 20; ++burst) {
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(stream->Push(Event("p", burst * 5 + i)), PushResult::kQueued);
    }
    v1::RunEvent event;
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(reader->Read(&event));  // a hinted write must not wait for the next burst
      EXPECT_EQ(event.item().version(), burst * 5 + i);
    }
  }
  stream->Close(grpc::Status::OK);
  v1::RunEvent event;
  EXPECT_FALSE(reader->Read(&event));
  EXPECT_TRUE(reader->Finish().ok());
  stream->done.WaitForNotification();
}

TEST_F(StreamWriterTest, ARefusedStreamSendsOnlyItsStatus) {
  service_.refuse = true;
  grpc::Status status;
  EXPECT_TRUE(Call(&status).empty());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(status.error_message(), "not this one");
}

}  // namespace
}  // namespace common
